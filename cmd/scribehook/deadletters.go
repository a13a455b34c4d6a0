package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/store"
)

func newDeadLettersCmd() *cobra.Command {
	return groupCmd("deadletters", "Sink deliveries that failed their last attempt, and their replay", "",
		newDeadLettersListCmd(), newDeadLettersReplayCmd())
}

// deadLetterFilter is --sink and --since, shared by list and replay.
type deadLetterFilter struct {
	sink, since string
}

func (f *deadLetterFilter) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.sink, "sink", "", "only this sink's dead letters")
	cmd.Flags().StringVar(&f.since, "since", "", "only those that failed at or after this ISO 8601 date-time, or this long ago (e.g. 2h)")
}

func (f *deadLetterFilter) sinceTime(now time.Time) (time.Time, error) {
	if f.since == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(f.since); err == nil {
		return now.Add(-d), nil
	}
	t, err := api.ParseTime(f.since)
	if err != nil {
		return time.Time{}, fmt.Errorf("--since: %w (or a duration such as 2h)", err)
	}
	return t, nil
}

func newDeadLettersListCmd() *cobra.Command {
	var (
		f      deadLetterFilter
		limit  int
		output outputFlag
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List dead letters, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			since, err := f.sinceTime(time.Now())
			if err != nil {
				return err
			}
			return printFromStore(cmd, output, func(ctx context.Context, _ configs.Config, st store.Store) ([]store.SinkDelivery, error) {
				rows, err := st.DeadLetters(ctx, f.sink, since, limit)
				if err != nil {
					return nil, fmt.Errorf("list dead letters: %w", err)
				}
				return rows, nil
			}, writeDeadLetters)
		},
	}
	f.register(cmd)
	cmd.Flags().IntVarP(&limit, "number", "n", 100, "how many to show")
	output.register(cmd, outputTable)
	return cmd
}

func writeDeadLetters(w io.Writer, rows []store.SinkDelivery) error {
	return writeRows(w, "ID\tSINK\tEVENT\tJOB\tATTEMPTS\tFAILED\tLAST ERROR", rows, func(d store.SinkDelivery) string {
		return fmt.Sprintf("%d\t%s\t%s\t%s\t%d\t%s\t%s", d.ID, cell(d.Sink), cell(d.Event.Type), cell(d.Event.JobID), d.Attempts,
			stamp(d.FailedAt), cell(d.LastError))
	})
}

func newDeadLettersReplayCmd() *cobra.Command {
	var f deadLetterFilter
	cmd := &cobra.Command{
		Use:   "replay [ID…]",
		Short: "Queue dead letters again: the given ids, or every one matching --sink/--since",
		Long: `Puts dead letters back in their sink's queue, due now, with their attempts reset; a running
serve delivers them within a second. Without ids, every dead letter matching --sink and --since
is replayed (at least one of them is required then, so that a bare replay does nothing by
accident).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && f.sink == "" && f.since == "" {
				return fmt.Errorf("give dead letter ids, or --sink and/or --since to replay every match")
			}
			now := time.Now()
			since, err := f.sinceTime(now)
			if err != nil {
				return err
			}
			var ids []int64
			for _, a := range args {
				id, err := strconv.ParseInt(a, 10, 64)
				if err != nil || id < 1 {
					return fmt.Errorf("dead letter id %q is not a positive integer", a)
				}
				ids = append(ids, id)
			}
			err = withStore(cmd, func(ctx context.Context, _ configs.Config, st store.Store) error {
				if len(args) == 0 {
					rows, err := st.DeadLetters(ctx, f.sink, since, 0)
					if err != nil {
						return fmt.Errorf("list dead letters: %w", err)
					}
					for _, d := range rows {
						ids = append(ids, d.ID)
					}
				}
				for _, id := range ids {
					if err := st.ReplayDeadLetter(ctx, id, now); err != nil {
						return fmt.Errorf("replay dead letter %d: %w", id, err)
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d dead letters queued again\n", len(ids))
			return nil
		},
	}
	f.register(cmd)
	return cmd
}
