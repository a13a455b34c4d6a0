package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook"
)

func newServeCmd() *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Receive callbacks durably, process them, and serve the local read API",
		Long: `Runs the callback endpoint (POST|PUT /v1/callbacks/{token}), the processing pipeline, and the
local read API (/v1/jobs, /v1/live/{id}/messages, /v1/live/{id}/events) with /healthz, /readyz and
/metrics. A delivery is answered 2xx only once it is committed to the store; deliveries
committed before a stop are processed at the next start.

Without a configuration file it runs on the defaults: SQLite in scribehook.db, listening on
127.0.0.1:8787. Secrets come from the environment variables the configuration names.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			secrets, err := cfg.Secrets(os.Environ())
			if err != nil {
				return err
			}
			// A weak token on the port that faces the service is guessed; refuse to start.
			if err := cfg.CheckStrength(secrets); err != nil {
				return fmt.Errorf("refusing to start:\n%w", err)
			}
			log := stderrLogger(cmd, verbose)
			if !verbose {
				// A daemon says what it does; the one-shot commands stay quiet.
				log.Logger.SetLevel(logrus.InfoLevel)
			}
			opts := []scribehook.Option{scribehook.WithLogger(log), scribehook.WithSecrets(secrets)}
			if cfg.Tracing.Enabled {
				withTracing, stop, err := startTracing(cmd, cfg, secrets, log)
				if err != nil {
					return err
				}
				// After the kit's shutdown: the spans of its last work are exported too.
				defer stop()
				opts = append(opts, withTracing)
			}
			kit, err := scribehook.New(cmd.Context(), cfg, opts...)
			if err != nil {
				return err
			}
			if err := kit.Run(cmd.Context()); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "debug logs")
	return cmd
}
