package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
)

func newSinksCmd() *cobra.Command {
	return groupCmd("sinks", "The sinks' state: list them, disable one, enable it again",
		`A sink whose destination answers 410 Gone is disabled, and so is one an operator disables; the
state is kept in the store, so it stays disabled across restarts until it is enabled again. A
disabled sink's deliveries stay queued (the one answered 410 is a dead letter, which
"deadletters replay" queues again). A running serve picks a change up within `+sinks.DefaultStateInterval.String()+`.`,
		newSinksListCmd(), newSinksEnableCmd(), newSinksDisableCmd(), newSinksDeliveriesCmd())
}

func newSinksListCmd() *cobra.Command {
	var output outputFlag
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the configured sinks and any sink with a recorded state, with their queues",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printFromStore(cmd, output, scribehook.SinkStatuses, writeSinks)
		},
	}
	output.register(cmd, outputTable)
	return cmd
}

func writeSinks(w io.Writer, rows []scribehook.SinkStatus) error {
	return writeRows(w, "SINK\tSTATE\tQUEUED\tSINCE\tREASON", rows, func(r scribehook.SinkStatus) string {
		state := "enabled"
		if r.Disabled {
			state = "disabled"
		}
		if !r.Configured {
			state += " (not configured)"
		}
		return fmt.Sprintf("%s\t%s\t%d\t%s\t%s", cell(r.Name), state, r.Queued, stamp(r.Since), cell(r.Reason))
	})
}

func newSinksEnableCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "enable NAME",
		Short: "Enable a disabled sink again: its queued deliveries go out",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return setSinkState(cmd, store.SinkState{Name: args[0]})
		},
	}
}

func newSinksDisableCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "disable NAME [--reason TEXT]",
		Short: "Disable a sink until it is enabled: its deliveries wait in its queue",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return setSinkState(cmd, store.SinkState{Name: args[0], Disabled: true, Reason: reason})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "disabled by an operator", "why, shown with the sink's state")
	return cmd
}

// setSinkState records st and says what follows from it.
func setSinkState(cmd *cobra.Command, st store.SinkState) error {
	return withStore(cmd, func(ctx context.Context, cfg configs.Config, s store.Store) error {
		status, err := scribehook.SetSinkState(ctx, cfg, s, st)
		if err != nil {
			return err
		}
		verb := "enabled"
		if status.Disabled {
			verb = "disabled"
		}
		fmt.Fprintf(cmd.OutOrStdout(), "sink %s %s (%d deliveries queued); a running serve follows within %s\n",
			status.Name, verb, status.Queued, sinks.DefaultStateInterval)
		return nil
	})
}
