package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook/store/sqlite"
)

func newBackupCmd() *cobra.Command {
	var (
		out     string
		verbose bool
	)
	cmd := &cobra.Command{
		Use:   "backup --out FILE",
		Short: "Write a consistent copy of the SQLite store, while serve runs",
		Long: `Copies the configured SQLite database into FILE through SQLite's online backup API: a snapshot
of one moment, taken on a read-only connection of its own, so serve (in this process or another)
goes on ingesting meanwhile. The copy is written under a temporary name beside FILE, checked with
PRAGMA integrity_check and renamed over FILE only then.

To restore: stop serve, remove the database's -wal and -shm files, copy FILE over the database
(store.dsn), start serve; it applies the migrations the copy lacks. See docs/operations.md.

A PostgreSQL store is backed up with pg_dump (one consistent snapshot of the whole database),
not with this command.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("--out is required: the file to write the copy to")
			}
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			if cfg.Store.Driver != "sqlite" {
				return fmt.Errorf("store.driver %s: scribehook backup copies SQLite stores only; back a PostgreSQL store up with pg_dump (docs/operations.md, \"Backup and restore\")", cfg.Store.Driver)
			}
			res, err := sqlite.Backup(cmd.Context(), cfg.Store.DSN, out, sqlite.BackupOptions{Logger: stderrLogger(cmd, verbose)})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "backup of %s written to %s: %d bytes, schema version %d, integrity ok, in %s\n",
				cfg.Store.DSN, res.Path, res.Bytes, res.SchemaVersion, seconds(res.Duration))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "file to write the copy to (replaced atomically)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "debug logs")
	return cmd
}
