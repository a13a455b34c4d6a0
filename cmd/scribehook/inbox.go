package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/store"
)

func newInboxCmd() *cobra.Command {
	return groupCmd("inbox", "Deliveries whose apply failed for good, and their replay",
		`A delivery is stored before it is acknowledged, then applied; an apply that fails is retried,
by default 1 s, 5 s, 30 s, 2 min and 10 min later, and after the last retry (or at once, for a
body that does not decode as its kind) the delivery is marked failed and waits here for a
replay (docs/operations.md, Failed deliveries).`,
		newInboxListCmd(), newInboxReplayCmd())
}

// inboxFilterFlags are the filter flags shared by list and replay.
type inboxFilterFlags struct {
	job, kind, since, until, errText string
}

func (f *inboxFilterFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.job, "job", "", "only the deliveries about this job or live session")
	cmd.Flags().StringVar(&f.kind, "kind", "", "only deliveries of this kind: "+kindList())
	cmd.Flags().StringVar(&f.since, "since", "", "only those received at or after this ISO 8601 date-time, or this long ago (e.g. 2h)")
	cmd.Flags().StringVar(&f.until, "until", "", "only those received before this ISO 8601 date-time, or this long ago")
	cmd.Flags().StringVar(&f.errText, "error", "", "only those whose last error contains this text")
}

func kindList() string {
	var names []string
	for _, k := range api.CallbackKinds() {
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}

// filter is the store's filter of the flags, at now for the durations.
func (f *inboxFilterFlags) filter(now time.Time) (store.InboxFilter, error) {
	out := store.InboxFilter{JobID: f.job, Kind: api.CallbackKind(f.kind), Error: f.errText}
	if f.kind != "" && !out.Kind.Valid() {
		return out, fmt.Errorf("--kind must be one of %s", kindList())
	}
	var err error
	if out.Since, err = pastTime("--since", f.since, now); err != nil {
		return out, err
	}
	if out.Until, err = pastTime("--until", f.until, now); err != nil {
		return out, err
	}
	return out, nil
}

// pastTime is a flag's time: an ISO 8601 date-time, or a duration before now; zero when empty.
func pastTime(flag, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(-d), nil
	}
	t, err := api.ParseTime(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w (or a duration such as 2h)", flag, err)
	}
	return t, nil
}

// jsonFlag is --json, the same as -o json.
func jsonFlag(cmd *cobra.Command, output *outputFlag) {
	var asJSON bool
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the same as -o json)")
	check := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if asJSON {
			*output = outputJSON
		}
		if check != nil {
			return check(c, args)
		}
		return nil
	}
}

func newInboxListCmd() *cobra.Command {
	var (
		f      inboxFilterFlags
		limit  int
		before int64
		output outputFlag
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the deliveries that failed for good, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			filter, err := f.filter(time.Now())
			if err != nil {
				return err
			}
			filter.BeforeID = before
			return printFromStore(cmd, output, func(ctx context.Context, _ configs.Config, st store.Store) ([]receiver.FailedView, error) {
				rows, err := st.FailedInbox(ctx, filter, limit)
				if err != nil {
					return nil, fmt.Errorf("list failed deliveries: %w", err)
				}
				return failedViews(rows), nil
			}, writeFailed)
		},
	}
	f.register(cmd)
	cmd.Flags().IntVarP(&limit, "number", "n", 100, "how many to show")
	cmd.Flags().Int64Var(&before, "before", 0, "only those with a smaller id: the next page after a list ending at this id")
	output.register(cmd, outputTable)
	jsonFlag(cmd, &output)
	return cmd
}

// failedViews are rows as the read API shows them, never nil (JSON prints an empty list as []).
func failedViews(rows []store.InboxRow) []receiver.FailedView {
	out := make([]receiver.FailedView, 0, len(rows))
	for _, r := range rows {
		out = append(out, receiver.NewFailedView(r))
	}
	return out
}

func writeFailed(w io.Writer, rows []receiver.FailedView) error {
	return writeRows(w, "ID\tJOB\tKIND\tEVENT\tATTEMPTS\tRECEIVED\tFAILED\tLAST ERROR", rows, func(v receiver.FailedView) string {
		return fmt.Sprintf("%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s", v.ID, cell(v.JobID), cell(string(v.Kind)), cell(v.Event), v.Attempts,
			stamp(v.ReceivedAt.Time), stamp(v.FailedAt.Time), cell(v.LastError))
	})
}

func newInboxReplayCmd() *cobra.Command {
	var (
		f      inboxFilterFlags
		all    bool
		dryRun bool
		output outputFlag
	)
	cmd := &cobra.Command{
		Use:   "replay [ID…]",
		Short: "Apply failed deliveries again: the given ids, or every one matching the filter flags",
		Long: `Moves failed deliveries back to pending, due now, with their attempts reset; a running serve
applies them within a few seconds (each once: a delivery applied meanwhile is left out). Fix
what made them fail first, or they fail again after their retries. Without ids, every failed
delivery matching --job, --kind, --since, --until and --error is replayed; at least one of them
is required then, or --all for every failed delivery, so that a bare replay does nothing by
accident. --dry-run lists what would be replayed and changes nothing.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			now := time.Now()
			filter, err := f.filter(now)
			if err != nil {
				return err
			}
			for _, a := range args {
				id, err := strconv.ParseInt(a, 10, 64)
				if err != nil || id < 1 {
					return fmt.Errorf("failed delivery id %q is not a positive integer", a)
				}
				filter.IDs = append(filter.IDs, id)
			}
			filter.All = all
			if filter.Empty() && !all {
				return fmt.Errorf("give failed delivery ids, or --job, --kind, --since, --until or --error, or --all to replay every failed delivery")
			}
			if dryRun {
				return printFromStore(cmd, output, func(ctx context.Context, _ configs.Config, st store.Store) ([]receiver.FailedView, error) {
					rows, err := st.FailedInbox(ctx, filter, 0)
					if err != nil {
						return nil, fmt.Errorf("list failed deliveries: %w", err)
					}
					return failedViews(rows), nil
				}, func(w io.Writer, rows []receiver.FailedView) error {
					if err := writeFailed(w, rows); err != nil {
						return err
					}
					_, err := fmt.Fprintf(w, "%d failed deliveries would be replayed (dry run: nothing changed)\n", len(rows))
					return err
				})
			}
			return withStore(cmd, func(ctx context.Context, _ configs.Config, st store.Store) error {
				moved, err := st.ReplayInbox(ctx, filter, now)
				if err != nil {
					return fmt.Errorf("replay failed deliveries: %w", err)
				}
				ids := make([]int64, len(moved))
				for i, k := range moved {
					ids[i] = k.ID
				}
				return output.print(cmd.OutOrStdout(), map[string]any{"replayed": len(ids), "ids": ids}, func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "%d failed deliveries replayed%s: a running serve applies them within a few seconds\n",
						len(ids), idList(ids))
					return err
				})
			})
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "replay every failed delivery the filter flags match, or every one without them")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be replayed, change nothing")
	output.register(cmd, outputTable)
	jsonFlag(cmd, &output)
	return cmd
}

// idList is " (ids 1, 2, 3)", or "" for none.
func idList(ids []int64) string {
	if len(ids) == 0 {
		return ""
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return " (ids " + strings.Join(parts, ", ") + ")"
}
