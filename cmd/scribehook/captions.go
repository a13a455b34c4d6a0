package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/store"
)

func newLiveCaptionsURLCmd() *cobra.Command {
	var (
		output outputFlag
		ttl    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "captions-url SESSION_ID [--ttl 2h]",
		Short: "Print signed, expiring URLs of a live session's captions, for a player or OBS",
		Long: `Prints two URLs of a live session's captions that need no bearer token, signed with a key
derived from the read token (as POST /v1/live/{id}/captions/url of a running serve does): the
HLS WebVTT playlist, for a video player beside the session's audio or video, and the caption
page, large white text for an OBS browser source. Anyone holding them reads that session's
captions until they expire; changing the read token revokes them. See docs/operations.md, Live
captions.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, func(ctx context.Context, cfg configs.Config, st store.Store) error {
				token, err := configs.LookupSecret(os.Environ(), cfg.ReadTokenEnv)
				if err != nil {
					return err
				}
				u, err := scribehook.CaptionsURL(ctx, st, cfg, token, args[0], ttl, time.Now())
				if err != nil {
					return err
				}
				return output.print(cmd.OutOrStdout(), u, func(w io.Writer) error { return printCaptionsURL(w, u) })
			})
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", receiver.DefaultCaptionsURLTTL, "how long the URLs work (1m to 720h)")
	output.register(cmd, outputTable)
	return cmd
}

func printCaptionsURL(w io.Writer, u receiver.CaptionsURL) error {
	_, err := fmt.Fprintf(w, "playlist: %s\npage:     %s\nexpires:  %s\n", u.URL, u.PageURL, u.ExpiresAt)
	return err
}
