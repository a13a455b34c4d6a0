package main

import (
	"context"
	"encoding/json"
	"errors"
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

func newJobsCmd() *cobra.Command {
	return groupCmd("jobs", "Jobs and deliveries in the local store: list, show, quarantine",
		`Reads the local store that "scribehook serve" writes (store.dsn of the configuration): the
jobs it received callbacks for or that submit and live created, and the deliveries it could
authenticate but not read (quarantine). Nothing is asked of the service; see "scribehook
remote" for its own lists.`,
		newJobsListCmd(), newJobsShowCmd(), newJobsQuarantineCmd())
}

func newJobsListCmd() *cobra.Command {
	var lf listFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List stored jobs, newest first, with the service's filters",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := lf.query(cmd)
			if err != nil {
				return err
			}
			if err := q.Validate(false); err != nil {
				return fmt.Errorf("filters: %w", err)
			}
			var recs []store.JobRecord
			err = withStore(cmd, func(ctx context.Context, _ configs.Config, st store.Store) error {
				recs, err = readList(cmd, &lf, func() ([]store.JobRecord, bool, error) {
					page, err := st.ListJobs(ctx, q)
					if err != nil {
						return nil, false, fmt.Errorf("list jobs: %w", err)
					}
					return page.Items, page.More, nil
				}, store.AllJobs(ctx, st, q))
				return err
			})
			if err != nil {
				return err
			}
			if lf.output.json() {
				items := make([]json.RawMessage, 0, len(recs))
				for _, r := range recs {
					b, err := receiver.JobJSON(r.Job, receiver.LocalView{Local: r.Local})
					if err != nil {
						return err
					}
					items = append(items, b)
				}
				return writeJSON(cmd.OutOrStdout(), items)
			}
			jobs := make([]api.Job, len(recs))
			for i, r := range recs {
				jobs[i] = r.Job
			}
			return writeJobsTable(cmd.OutOrStdout(), jobs)
		},
	}
	lf.register(cmd)
	return cmd
}

func newJobsShowCmd() *cobra.Command {
	var output outputFlag
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one stored job: the service's record, what scribehook knows of it, its live messages",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			return withStore(cmd, func(ctx context.Context, cfg configs.Config, st store.Store) error {
				rec, err := st.GetJob(ctx, id)
				if errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("job %s is not in the local store %s (see scribehook remote get for the service's record)", id, cfg.Store.DSN)
				}
				if err != nil {
					return fmt.Errorf("read job %s: %w", id, err)
				}
				local, err := localView(ctx, st, rec)
				if err != nil {
					return err
				}
				if output.json() {
					b, err := receiver.JobJSON(rec.Job, local)
					if err != nil {
						return err
					}
					return writeJSON(cmd.OutOrStdout(), b)
				}
				return writeJobDetails(cmd.OutOrStdout(), rec, local)
			})
		},
	}
	output.register(cmd, outputTable)
	return cmd
}

// localView is what this machine knows of a stored job beside the service's record (jobs
// show, submit --wait): its local fields, its artifacts and, for a live session, how many of
// its messages are stored.
func localView(ctx context.Context, st store.Store, rec store.JobRecord) (receiver.LocalView, error) {
	id := rec.Job.ID
	arts, err := st.Artifacts(ctx, id)
	if err != nil {
		return receiver.LocalView{}, fmt.Errorf("read artifacts of %s: %w", id, err)
	}
	local := receiver.NewLocalView(rec.Local, arts)
	if rec.Job.Kind == api.KindLive {
		n, err := countLiveMessages(ctx, st, id)
		if err != nil {
			return receiver.LocalView{}, err
		}
		local.LiveMessages = &n
	}
	return local, nil
}

// countLiveMessages counts a session's stored messages; they are read a page at a time, so a
// long session is never held in memory at once.
func countLiveMessages(ctx context.Context, st store.Store, id string) (int64, error) {
	var n int64
	for _, err := range store.AllLiveMessages(ctx, st, id) {
		if err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

// writeJobDetails prints one job as aligned "name value" lines.
func writeJobDetails(w io.Writer, rec store.JobRecord, local receiver.LocalView) error {
	tw := newTable(w)
	line := func(name, value string) { fmt.Fprintf(tw, "%s\t%s\n", name, cell(value)) }
	j := rec.Job
	line("id", j.ID)
	line("kind", string(j.Kind))
	line("status", string(j.Status))
	line("created", stamp(j.CreatedAt.Time))
	if j.CompletedAt != nil {
		line("completed", stamp(j.CompletedAt.Time))
	}
	if j.ErrorCode != nil {
		line("error code", strconv.Itoa(*j.ErrorCode))
	}
	if len(j.CustomMetadata) > 0 {
		line("metadata", string(j.CustomMetadata))
	}
	if r, _ := j.DecodeResult(); r != nil {
		if r.Metadata != nil {
			line("audio", fmt.Sprintf("%.1fs", r.Metadata.AudioDuration))
		}
		if t := r.Transcription; t != nil {
			line("utterances", strconv.Itoa(len(t.Utterances)))
			line("transcript", firstWords(t.FullTranscript, 16))
		}
	}
	line("source", local.Source)
	line("received", stamp(local.ReceivedAt))
	line("updated", stamp(local.UpdatedAt))
	line("deliveries", strconv.Itoa(local.Deliveries))
	if local.ErrorMessage != "" {
		line("error", local.ErrorMessage)
	}
	if local.Resolution != "" {
		line("resolution", local.Resolution)
	}
	if local.LiveMessages != nil {
		line("live messages", strconv.FormatInt(*local.LiveMessages, 10))
	}
	for _, a := range local.Artifacts {
		desc := a.Format
		if a.Language != "" {
			desc += ", " + a.Language
		}
		line("artifact", fmt.Sprintf("%s (%s) %s", a.Name, desc, a.Path))
	}
	return tw.Flush()
}

func newJobsQuarantineCmd() *cobra.Command {
	var (
		n      int
		output outputFlag
	)
	cmd := &cobra.Command{
		Use:   "quarantine",
		Short: "List authenticated deliveries that could not be read, newest first",
		Long: `Lists the deliveries serve authenticated and stored raw, but could not classify (rule 2 of
the design: schema drift on the service side must not lose data). Each shows its route, the
reason, when it arrived, its size and its first bytes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n < 1 {
				return fmt.Errorf("-n %d: give at least 1", n)
			}
			return withStore(cmd, func(ctx context.Context, _ configs.Config, st store.Store) error {
				rows, err := st.Quarantined(ctx, n)
				if err != nil {
					return fmt.Errorf("list quarantine: %w", err)
				}
				return output.print(cmd.OutOrStdout(), quarantineItems(rows), func(w io.Writer) error { return writeQuarantine(w, rows) })
			})
		},
	}
	cmd.Flags().IntVarP(&n, "number", "n", 20, "how many deliveries to show")
	output.register(cmd, outputTable)
	return cmd
}

// quarantineItem is a quarantined delivery in the JSON output: its first bytes, not its body.
type quarantineItem struct {
	ID         int64     `json:"id"`
	Route      string    `json:"route"`
	Reason     string    `json:"reason"`
	ReceivedAt time.Time `json:"received_at"`
	Size       int       `json:"size"`
	FirstBytes string    `json:"first_bytes"`
}

func quarantineItems(rows []store.QuarantineRow) []quarantineItem {
	items := make([]quarantineItem, 0, len(rows))
	for _, r := range rows {
		items = append(items, quarantineItem{r.ID, r.Route, r.Reason, r.ReceivedAt.UTC(), len(r.Body), firstBytes(r.Body, 200)})
	}
	return items
}

func writeQuarantine(w io.Writer, rows []store.QuarantineRow) error {
	return writeRows(w, "ID\tROUTE\tRECEIVED\tSIZE\tREASON\tFIRST BYTES", rows, func(r store.QuarantineRow) string {
		return fmt.Sprintf("%d\t%s\t%s\t%d\t%s\t%s", r.ID, cell(r.Route), stamp(r.ReceivedAt),
			len(r.Body), cell(r.Reason), firstBytes(r.Body, 40))
	})
}

// firstBytes shows the start of a body on one line: printable text as is, anything else
// escaped, cut at limit bytes with "…".
func firstBytes(body []byte, limit int) string {
	cut := len(body) > limit
	if cut {
		body = body[:limit]
	}
	q := strconv.QuoteToGraphic(string(body))
	q = q[1 : len(q)-1] // the quotes add nothing in a column
	q = strings.ReplaceAll(q, `\"`, `"`)
	if cut {
		q += "…"
	}
	return q
}
