package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/retention"
	"github.com/scribehook/scribehook/store"
)

// vacuumer is a store that can give pruned space back to the file system once converted
// (SQLite).
type vacuumer interface {
	IncrementalVacuum(ctx context.Context) (bool, error)
	Vacuum(ctx context.Context) error
}

// pruneResult is what -o json prints.
type pruneResult struct {
	DryRun         bool                      `json:"dry_run"`
	Rows           map[store.PruneKind]int64 `json:"rows"`
	Total          int64                     `json:"total"`
	ReclaimedBytes int64                     `json:"reclaimed_bytes"`
	Vacuumed       bool                      `json:"vacuumed,omitempty"`
}

func newPruneCmd() *cobra.Command {
	var (
		dryRun, vacuum, verbose bool
		output                  outputFlag
	)
	cmd := &cobra.Command{
		Use:   "prune [--dry-run]",
		Short: "Delete what the retention section has kept long enough; --dry-run says what would go",
		Long: `Deletes, once and now, what serve's background pruner deletes every retention.interval: processed
inbox rows, messages of ended live sessions by category, finished jobs with their subtitle files,
delivered sink deliveries, dead letters and quarantined deliveries older than their retention.*
durations, and callback tokens past receiver.token_ttl, in batches of retention.batch_size rows per
transaction, so it can run beside serve.
What is still at work is never deleted: inbox rows not processed, deliveries not delivered, jobs
not final, sessions not ended. Subtitle files are removed by their stored paths, which are
relative to serve's working directory: run it from there.

On SQLite the space is given back to the file system. A database created before retention keeps
its size (freed pages are reused) until --vacuum rewrites it once; that holds the write lock for
the whole copy and needs free disk of about twice the database (a temporary copy, and the WAL
it is written back through), so run it with serve stopped. See
docs/operations.md, Retention.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(ctx context.Context, cfg configs.Config, st store.Store) error {
				p, err := retention.New(retention.Config{Store: st, Policy: retention.PolicyOf(cfg.Retention, cfg.Receiver.TokenTTL),
					Logger: stderrLogger(cmd, verbose)})
				if err != nil {
					return err
				}
				rep, err := p.Prune(ctx, dryRun)
				if err != nil {
					return err
				}
				res := pruneResult{DryRun: rep.DryRun, Rows: rep.Rows, Total: rep.Total(), ReclaimedBytes: rep.ReclaimedBytes}
				note := ""
				if v, ok := st.(vacuumer); ok {
					if res.Vacuumed, note, err = vacuumStore(ctx, v, vacuum && !dryRun); err != nil {
						return err
					}
				}
				return output.print(cmd.OutOrStdout(), res, func(w io.Writer) error {
					return writePruneReport(w, res, retention.Durations(cfg.Retention, cfg.Receiver.TokenTTL), note)
				})
			})
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "delete nothing: count what would go")
	cmd.Flags().BoolVar(&vacuum, "vacuum", false, "SQLite: rewrite a database created before retention so that pruning gives space back (serve stopped)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "debug logs")
	output.register(cmd, outputTable)
	return cmd
}

// vacuumStore converts the database when asked, and otherwise says how to when it needs it.
func vacuumStore(ctx context.Context, v vacuumer, convert bool) (bool, string, error) {
	ok, err := v.IncrementalVacuum(ctx)
	if err != nil || ok {
		return false, "", err
	}
	if !convert {
		return false, "this SQLite database was created before retention: pruned pages are reused, not given back; run scribehook prune --vacuum once with serve stopped", nil
	}
	if err := v.Vacuum(ctx); err != nil {
		return false, "", err
	}
	return true, "", nil
}

// writePruneReport prints one line per kind, with how long the configuration keeps it.
func writePruneReport(w io.Writer, res pruneResult, kept map[store.PruneKind]configs.Keep, note string) error {
	verb := "pruned"
	if res.DryRun {
		verb = "would prune (dry run)"
	}
	err := writeRows(w, "KIND\tKEPT\tROWS", store.PruneKinds(), func(kind store.PruneKind) string {
		return fmt.Sprintf("%s\t%s\t%d", kind, kept[kind], res.Rows[kind])
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s %d rows", verb, res.Total)
	if res.ReclaimedBytes > 0 {
		fmt.Fprintf(w, ", %d bytes given back to the file system", res.ReclaimedBytes)
	}
	fmt.Fprintln(w)
	if res.Vacuumed {
		fmt.Fprintln(w, "database rewritten: pruning gives space back from now on")
	}
	if note != "" {
		fmt.Fprintln(w, "note: "+note)
	}
	return nil
}
