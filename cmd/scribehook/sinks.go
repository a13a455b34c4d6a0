package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

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
		newSinksListCmd(), newSinksEnableCmd(), newSinksDisableCmd())
}

// sinkRow is one sink as sinks list shows it.
type sinkRow struct {
	Name       string    `json:"name"`
	Configured bool      `json:"configured"`
	Disabled   bool      `json:"disabled"`
	Reason     string    `json:"reason,omitempty"`
	Since      time.Time `json:"since,omitzero"`
	Queued     int64     `json:"queued"`
}

func newSinksListCmd() *cobra.Command {
	var output outputFlag
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the configured sinks and any sink with a recorded state, with their queues",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printFromStore(cmd, output, listSinks, writeSinks)
		},
	}
	output.register(cmd, outputTable)
	return cmd
}

func listSinks(ctx context.Context, cfg configs.Config, st store.Store) ([]sinkRow, error) {
	states, err := st.SinkStates(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]*sinkRow{}
	var rows []*sinkRow
	row := func(name string) *sinkRow {
		if r := byName[name]; r != nil {
			return r
		}
		r := &sinkRow{Name: name}
		byName[name] = r
		rows = append(rows, r)
		return r
	}
	for _, s := range cfg.Sinks {
		row(s.Name).Configured = true
	}
	for _, s := range states {
		r := row(s.Name)
		r.Disabled, r.Reason, r.Since = s.Disabled, s.Reason, s.Since
	}
	out := make([]sinkRow, 0, len(rows))
	for _, r := range rows {
		if r.Queued, err = st.SinkDepth(ctx, r.Name); err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b sinkRow) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func writeSinks(w io.Writer, rows []sinkRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SINK\tSTATE\tQUEUED\tSINCE\tREASON")
	for _, r := range rows {
		state := "enabled"
		if r.Disabled {
			state = "disabled"
		}
		if !r.Configured {
			state += " (not configured)"
		}
		since := ""
		if !r.Since.IsZero() {
			since = r.Since.UTC().Format("2006-01-02 15:04:05")
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", r.Name, state, r.Queued, since, r.Reason)
	}
	return tw.Flush()
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

// setSinkState records st for a sink the configuration names, or one with a recorded state
// (a sink since removed from the configuration can still be enabled).
func setSinkState(cmd *cobra.Command, st store.SinkState) error {
	return withStore(cmd, func(ctx context.Context, cfg configs.Config, s store.Store) error {
		rows, err := listSinks(ctx, cfg, s)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(rows, func(r sinkRow) bool { return r.Name == st.Name })
		if i < 0 {
			names := make([]string, 0, len(rows))
			for _, r := range rows {
				names = append(names, r.Name)
			}
			return fmt.Errorf("no sink %q in the configuration (sinks: %s)", st.Name, strings.Join(names, ", "))
		}
		if err := s.SetSinkState(ctx, st); err != nil {
			return err
		}
		verb := "enabled"
		if st.Disabled {
			verb = "disabled"
		}
		fmt.Fprintf(cmd.OutOrStdout(), "sink %s %s (%d deliveries queued); a running serve follows within %s\n",
			st.Name, verb, rows[i].Queued, sinks.DefaultStateInterval)
		return nil
	})
}
