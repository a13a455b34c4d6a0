package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook/configs"
)

// envConfig names the configuration file when --config is not given. It is not a
// configuration key (there is no "config" key), so configs never takes it as an override.
const envConfig = "SCRIBEHOOK_CONFIG"

// addConfigFlag gives every command the --config flag.
func addConfigFlag(root *cobra.Command) {
	root.PersistentFlags().String("config", "",
		"YAML configuration file (default: $"+envConfig+"; without either, the built-in defaults)")
}

// configPath is --config, else $SCRIBEHOOK_CONFIG, else "" (defaults only).
func configPath(cmd *cobra.Command) string {
	if f := cmd.Flag("config"); f != nil && f.Changed {
		return f.Value.String()
	}
	return os.Getenv(envConfig)
}

// loadConfig loads the configuration of the command: --config, then SCRIBEHOOK_* overrides.
func loadConfig(cmd *cobra.Command) (configs.Config, error) {
	return configs.Load(configPath(cmd), os.Environ())
}

// apiKeySecrets resolves only the API key: submit and live need nothing else, and must not
// fail because a route token that only serve needs is missing from this shell.
func apiKeySecrets(cfg configs.Config) (configs.Secrets, error) {
	key, err := configs.LookupSecret(os.Environ(), cfg.Service.APIKeyEnv)
	if err != nil {
		return configs.Secrets{}, err
	}
	return configs.Secrets{APIKey: key}, nil
}

// stderrLogger logs warnings (reconnections, retries) to the command's stderr; verbose adds
// every call.
func stderrLogger(cmd *cobra.Command, verbose bool) *logrus.Entry {
	l := logrus.New()
	l.Out = cmd.ErrOrStderr()
	l.Level = logrus.WarnLevel
	if verbose {
		l.Level = logrus.DebugLevel
	}
	return logrus.NewEntry(l)
}

// isTerminal reports whether w is a character device: progress then redraws one line
// instead of printing one line per update.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// newTable aligns the columns of a command's table, two spaces apart.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// writeRows prints the table of a list: its header, then one line per row as line formats it
// (tab-separated, as the header).
func writeRows[T any](w io.Writer, header string, rows []T, line func(T) string) error {
	tw := newTable(w)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, line(r))
	}
	return tw.Flush()
}

// stamp is a time as the tables show it: UTC, to the second; "" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// seconds renders a duration in seconds with one decimal, as the job summaries do.
func seconds(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }
