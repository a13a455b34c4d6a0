package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/internal/termtext"
	"github.com/scribehook/scribehook/reconcile"
)

// reconcileResult is what -o json prints.
type reconcileResult struct {
	DryRun bool                `json:"dry_run"`
	Jobs   []reconcile.Outcome `json:"jobs"`
}

func newReconcileCmd() *cobra.Command {
	var (
		dryRun, verbose bool
		output          outputFlag
	)
	cmd := &cobra.Command{
		Use:   "reconcile [--dry-run]",
		Short: "Ask the service about the jobs whose end never came, and apply what their lost callbacks would have brought",
		Long: `Does once, now, what serve's reconciler does every reconcile.every (on by default with a service
API key): each job and live session this kit created whose end is due and not applied is asked of
the service (GET /v2/pre-recorded/{id} or /v2/live/{id}). A finished job's result, and the messages
a session's record holds that the store lacks, are committed to the inbox as the callbacks would
have been, and applied once by the running serve (within its bus.sweep_interval); a job the
service has not finished is asked again later. --dry-run asks and says what it would commit,
changing nothing. It runs beside serve, on the same store. See docs/operations.md,
Reconciliation.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			secrets, err := cfg.Secrets(os.Environ())
			if err != nil {
				return err
			}
			if secrets.APIKey == "" {
				return errors.New("reconcile: " + cfg.Service.APIKeyEnv + " is not set: the service cannot be asked")
			}
			kit, err := scribehook.New(cmd.Context(), cfg, scribehook.WithLogger(stderrLogger(cmd, verbose)), scribehook.WithSecrets(secrets))
			if err != nil {
				return err
			}
			defer kit.Close()
			out, err := kit.Reconcile(cmd.Context(), dryRun)
			if err != nil {
				return err
			}
			res := reconcileResult{DryRun: dryRun, Jobs: out}
			if res.Jobs == nil {
				res.Jobs = []reconcile.Outcome{}
			}
			return output.print(cmd.OutOrStdout(), res, func(w io.Writer) error { return writeReconcile(w, res) })
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "ask the service, commit nothing: say what would be applied")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "debug logs")
	output.register(cmd, outputTable)
	return cmd
}

func writeReconcile(w io.Writer, res reconcileResult) error {
	if len(res.Jobs) == 0 {
		_, err := fmt.Fprintln(w, "nothing due: every job the kit created has ended, or is not due yet")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tKIND\tACTION\tSERVICE\tDELIVERIES\tNEXT\tERROR")
	for _, o := range res.Jobs {
		next := ""
		if !o.Next.IsZero() {
			next = o.Next.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", termtext.Line(o.JobID), o.Kind, o.Action, o.Status, o.Deliveries, next, termtext.Line(o.Error))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.DryRun {
		_, err := fmt.Fprintln(w, "dry run: nothing was committed")
		return err
	}
	return nil
}
