package main

import "github.com/spf13/cobra"

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "scribehook",
		Short:         "Receive, store, subtitle and forward transcription callbacks",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRemoteCmd())
	root.AddCommand(newSandboxCmd())
	root.AddCommand(newDemoCmd())
	addConfigFlag(root)
	root.AddCommand(newServeCmd())
	root.AddCommand(newSubmitCmd())
	root.AddCommand(newLiveCmd())
	root.AddCommand(newJobsCmd())
	root.AddCommand(newSearchCmd())
	root.AddCommand(newExportCmd())
	root.AddCommand(newDeadLettersCmd())
	root.AddCommand(newReplayCmd())
	root.AddCommand(newInboxCmd())
	root.AddCommand(newHealthcheckCmd())
	root.AddCommand(newPruneCmd())
	root.AddCommand(newReconcileCmd())
	root.AddCommand(newBackupCmd())
	root.AddCommand(newMigrateCmd())
	root.AddCommand(newSinksCmd())
	root.AddCommand(newTokenCmd())
	root.AddCommand(newSessionsCmd())
	root.AddCommand(newSpeakersCmd())
	return root
}
