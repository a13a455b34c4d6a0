package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/store"
)

func newMigrateCmd() *cobra.Command {
	var check bool
	cmd := &cobra.Command{
		Use:   "migrate [--check]",
		Short: "Bring the store's schema up to this binary's version, or say what that would do",
		Long: `Applies the schema migrations the configured store lacks, as serve does when it starts. With
--check it changes nothing and says what an upgrade will do: the database's schema version, and
each migration that would run with what it does. Migrations only go forward; a database written
by a newer scribehook is refused. Take a backup first (scribehook backup, or pg_dump).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			plan, err := scribehook.MigrateStore(cmd.Context(), cfg, !check)
			if err != nil {
				return err
			}
			printPlan(cmd.OutOrStdout(), storeName(cfg), plan, check)
			return nil
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "say what would run, change nothing")
	return cmd
}

// storeName names the store in messages; a PostgreSQL DSN may hold a password, so it is not
// repeated.
func storeName(cfg configs.Config) string {
	if cfg.Store.Driver == "sqlite" {
		return "sqlite " + cfg.Store.DSN
	}
	return cfg.Store.Driver + " (store.dsn)"
}

func printPlan(w io.Writer, where string, p store.MigrationPlan, check bool) {
	if len(p.Pending) == 0 {
		fmt.Fprintf(w, "%s: schema version %d, up to date: nothing to run\n", where, p.Current)
		return
	}
	verb := "applied"
	if check {
		verb = "would run"
	}
	fmt.Fprintf(w, "%s: schema version %d, this binary's is %d\n", where, p.Current, p.Latest)
	fmt.Fprintf(w, "%d migrations %s, in order:\n", len(p.Pending), verb)
	tw := newTable(w)
	for _, m := range p.Pending {
		fmt.Fprintf(tw, "  %s\t%s\n", m.Name, m.Summary)
	}
	_ = tw.Flush()
	if !check {
		fmt.Fprintf(w, "schema version now %d\n", p.Latest)
	}
}
