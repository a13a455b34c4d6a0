package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/submitter"
)

// withStore loads the command's configuration and runs run on the store it names, closed when
// run returns: every command that reads this machine's store (jobs, deadletters, export) is
// set up alike, and a command body only reads, decides and prints.
func withStore(cmd *cobra.Command, run func(ctx context.Context, cfg configs.Config, st store.Store) error) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	return useStore(cmd.Context(), cfg, func(st store.Store) error { return run(cmd.Context(), cfg, st) })
}

// printFromStore is withStore for a command that only shows what it reads: read's value is
// printed as JSON with -o json, else by table.
func printFromStore[T any](cmd *cobra.Command, output outputFlag,
	read func(ctx context.Context, cfg configs.Config, st store.Store) (T, error), table func(w io.Writer, v T) error) error {
	return withStore(cmd, func(ctx context.Context, cfg configs.Config, st store.Store) error {
		v, err := read(ctx, cfg, st)
		if err != nil {
			return err
		}
		return output.print(cmd.OutOrStdout(), v, func(w io.Writer) error { return table(w, v) })
	})
}

// groupCmd is a command that only holds its subcommands (jobs, deadletters, sinks, remote).
func groupCmd(use, short, long string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Long: long}
	cmd.AddCommand(subs...)
	return cmd
}

// withService is withStore for the commands that create jobs at the service (submit, live):
// it also builds a client of the configured service with the API key from the environment,
// logging to stderr (every call when verbose). The key is checked before the store is opened,
// so a shell without it leaves no store behind.
func withService(cmd *cobra.Command, verbose bool,
	run func(ctx context.Context, cfg configs.Config, st store.Store, client *submitter.Client) error) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	secrets, err := apiKeySecrets(cfg)
	if err != nil {
		return err
	}
	client, err := scribehook.ServiceClient(cfg, secrets.APIKey, submitter.WithLogger(stderrLogger(cmd, verbose)))
	if err != nil {
		return err
	}
	return useStore(cmd.Context(), cfg, func(st store.Store) error { return run(cmd.Context(), cfg, st, client) })
}

// useStore opens the configured store for run and closes it after.
func useStore(ctx context.Context, cfg configs.Config, run func(st store.Store) error) error {
	st, err := scribehook.OpenStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	return run(st)
}
