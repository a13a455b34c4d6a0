package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/store"
)

func newReplayCmd() *cobra.Command {
	var (
		sink, since, until string
		types              []string
		dryRun             bool
		output             outputFlag
	)
	cmd := &cobra.Command{
		Use:   "replay --sink NAME --since T [--until T] [--type PATTERN]…",
		Short: "Queue a sink's events of a window again, or backfill a sink added later",
		Long: `Queues for one configured sink, under their original event ids (receivers dedupe on
webhook-id), the stored events first queued in the window [--since, --until): those it was
sent (delivered or dead) go back to its queue with their attempts reset, due now; those it never
had (a sink added later) are queued for it when its filter takes them (a backfill). A delivery
still queued is left as it is, so running the command twice queues nothing twice. --type
(repeatable, event type globs such as job.* or live.transcript) narrows both. Only what
retention kept can be replayed. A running serve on the same store delivers them at its next
poll (within a second).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if sink == "" {
				return fmt.Errorf("--sink is required")
			}
			if since == "" {
				return fmt.Errorf("--since is required (a date-time, or a duration ago such as 2h)")
			}
			now := time.Now()
			w := scribehook.ReplayWindow{Types: types, DryRun: dryRun}
			var err error
			if w.Since, err = pastTime("--since", since, now); err != nil {
				return err
			}
			if w.Until, err = pastTime("--until", until, now); err != nil {
				return err
			}
			return withStore(cmd, func(ctx context.Context, cfg configs.Config, st store.Store) error {
				rep, err := scribehook.ReplaySink(ctx, st, scribehook.ConfiguredSinkSpecs(cfg), sink, w, now)
				if err != nil {
					return err
				}
				return output.print(cmd.OutOrStdout(), rep, func(w io.Writer) error { return writeReplay(w, rep) })
			})
		},
	}
	cmd.Flags().StringVar(&sink, "sink", "", "the configured sink to replay to (required)")
	cmd.Flags().StringVar(&since, "since", "", "events first queued at or after this ISO 8601 date-time, or this long ago (e.g. 2h) (required)")
	cmd.Flags().StringVar(&until, "until", "", "and before this date-time, or this long ago (default: now)")
	cmd.Flags().StringArrayVar(&types, "type", nil, "only events of this type glob (repeatable)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be queued, queue nothing")
	output.register(cmd, outputTable)
	return cmd
}

func writeReplay(w io.Writer, r scribehook.ReplayReport) error {
	verb := "queued"
	if r.DryRun {
		verb = "would queue"
	}
	_, err := fmt.Fprintf(w, "%s: %s %d again, %s %d by backfill; %d already queued, %d not taken\n",
		r.Sink, verb, len(r.Requeued), verb, len(r.Backfilled), len(r.AlreadyQueued), r.Skipped)
	return err
}

func newSinksDeliveriesCmd() *cobra.Command {
	var (
		q      store.SinkHistoryQuery
		since  string
		output outputFlag
	)
	cmd := &cobra.Command{
		Use:   "deliveries NAME",
		Short: "List a sink's deliveries, newest first (event, type, job, status, attempts, last error)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q.Sink = args[0]
			if q.Status != "" && q.Status != "queued" && q.Status != "delivered" && q.Status != "dead" {
				return fmt.Errorf("--status must be queued, delivered or dead")
			}
			var err error
			if q.Since, err = pastTime("--since", since, time.Now()); err != nil {
				return err
			}
			return printFromStore(cmd, output, func(ctx context.Context, _ configs.Config, st store.Store) ([]store.SinkHistoryItem, error) {
				return scribehook.SinkHistory(ctx, st, q)
			}, writeSinkHistory)
		},
	}
	cmd.Flags().StringVar(&q.Status, "status", "", "only queued, delivered or dead ones")
	cmd.Flags().StringVar(&since, "since", "", "only those queued at or after this date-time, or this long ago (e.g. 2h)")
	cmd.Flags().Int64Var(&q.Before, "before", 0, "only those with an id below this one (the next page)")
	cmd.Flags().IntVarP(&q.Limit, "number", "n", 50, "how many to show")
	output.register(cmd, outputTable)
	return cmd
}

func writeSinkHistory(w io.Writer, rows []store.SinkHistoryItem) error {
	return writeRows(w, "ID\tEVENT\tTYPE\tJOB\tSTATUS\tATTEMPTS\tQUEUED\tDONE\tLAST ERROR", rows, func(it store.SinkHistoryItem) string {
		done := stamp(it.DeliveredAt)
		if done == "" {
			done = stamp(it.FailedAt)
		}
		return fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s", it.ID, cell(it.EventID), cell(it.EventType), cell(it.JobID),
			it.Status, it.Attempts, stamp(it.CreatedAt), done, cell(strings.TrimSpace(it.LastError)))
	})
}
