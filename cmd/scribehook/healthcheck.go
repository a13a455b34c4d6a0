package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// newHealthcheckCmd is the container image's HEALTHCHECK: the image is FROM scratch, with no
// curl or shell, so the binary itself asks serve's /readyz.
func newHealthcheckCmd() *cobra.Command {
	var (
		url     string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "healthcheck [--url URL]",
		Short: "Exit 0 when serve's /readyz answers 200, 1 otherwise",
		Long: `Asks GET /readyz of a running serve and exits 0 when it answers 200 (ready), non-zero
otherwise (not ready, no answer, or --timeout passed), printing why. It is the health check of
the container image, which has no shell or curl.

Without --url it asks the address serve listens on, from the same configuration (--config,
$SCRIBEHOOK_CONFIG, SCRIBEHOOK_LISTEN): a wildcard host (0.0.0.0, ::, or none) is asked on
loopback.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url == "" {
				cfg, err := loadConfig(cmd)
				if err != nil {
					return err
				}
				if url, err = readyzURL(cfg.Listen); err != nil {
					return err
				}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			body, err := checkReady(ctx, url)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), body)
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "url", "", "URL to ask (default: /readyz on serve's listen address)")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "give up after this long")
	return cmd
}

// readyzURL is the /readyz URL of a serve listening on listen. A wildcard address accepts on
// loopback too, and loopback is what a check inside the container or host can always reach.
func readyzURL(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("listen %q: %w", listen, err)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/readyz", nil
}

// checkReady GETs url and returns its body when it answered 200; any other answer is an error
// carrying the status and the start of the body (/readyz says there what is not ready).
func checkReady(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("healthcheck: %w", err)
	}
	// No proxy from the environment: the check is of this host's serve, never of a proxy's view.
	client := &http.Client{Transport: &http.Transport{}}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	body := strings.TrimSpace(string(raw))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("healthcheck: %s answered %d: %s", url, resp.StatusCode, body)
	}
	return body, nil
}
