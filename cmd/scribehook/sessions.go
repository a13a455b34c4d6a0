package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/store"
)

func newSessionsCmd() *cobra.Command {
	return groupCmd("sessions", "The dashboard's sign-in sessions", "", newSessionsRevokeAllCmd())
}

// revokeAllResult is what -o json prints: the read API's answer to POST /v1/sessions/revoke.
type revokeAllResult struct {
	RevokedBefore string `json:"revoked_before"`
}

func newSessionsRevokeAllCmd() *cobra.Command {
	var output outputFlag
	cmd := &cobra.Command{
		Use:   "revoke-all",
		Short: "Sign every dashboard session out, in every browser and on every replica",
		Long: `Signs out every dashboard session issued until now: each browser signed in to the dashboard, and
anyone holding a copy of its cookie, must sign in again with the read token. It writes to the store
that serve's replicas share, so it runs beside a running serve, as POST /v1/sessions/revoke of the
read API does. Changing the read token signs every browser out too. See docs/security.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(ctx context.Context, _ configs.Config, st store.Store) error {
				before, err := scribehook.RevokeDashboardSessions(ctx, st, time.Now())
				if err != nil {
					return err
				}
				res := revokeAllResult{RevokedBefore: before.UTC().Format(time.RFC3339)}
				return output.print(cmd.OutOrStdout(), res, func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "every dashboard session issued until %s is signed out\n", res.RevokedBefore)
					return err
				})
			})
		},
	}
	output.register(cmd, outputTable)
	return cmd
}
