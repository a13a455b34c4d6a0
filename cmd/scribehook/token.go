package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook/configs"
)

func newTokenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Make secrets strong enough for serve",
	}
	var signing bool
	newCmd := &cobra.Command{
		Use:   "new",
		Short: "Print a new random token (256 bits) for the read token, a route token or a signing secret",
		Long: `Prints a new token: 32 bytes from the system's random generator, base64url without padding
(43 characters). serve refuses a read token, route token or signing secret under 128 bits
(at least 22 characters from a random generator; docs/security.md says what it checks).
With --signing, a Standard Webhooks secret instead: whsec_ and 32 random bytes in base64.

  export SCRIBEHOOK_READ_TOKEN=$(scribehook token new)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			gen := configs.NewToken
			if signing {
				gen = configs.NewSigningSecret
			}
			tok, err := gen()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), tok)
			return err
		},
	}
	newCmd.Flags().BoolVar(&signing, "signing", false, "a whsec_ signing secret (Standard Webhooks)")
	cmd.AddCommand(newCmd)
	return cmd
}
