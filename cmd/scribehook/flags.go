package main

import (
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook/api"
)

// listFlags are the list filters and paging of the service's lists, shared by `jobs list`
// (the local store) and `remote list` (the service) so both read the same flags the same way.
type listFlags struct {
	kinds, statuses, metadata   []string
	date, beforeDate, afterDate string
	limit, offset               int
	all                         bool
	output                      outputFlag
}

func (lf *listFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringSliceVar(&lf.kinds, "kind", nil, "kinds to keep: pre-recorded, live (repeat or comma-separate)")
	f.StringSliceVar(&lf.statuses, "status", nil, "statuses to keep: queued, processing, done, error (repeat or comma-separate)")
	f.StringVar(&lf.date, "date", "", "jobs of one day, YYYY-MM-DD")
	f.StringVar(&lf.beforeDate, "before-date", "", "jobs created before this ISO 8601 date-time")
	f.StringVar(&lf.afterDate, "after-date", "", "jobs created after this ISO 8601 date-time")
	f.StringArrayVar(&lf.metadata, "metadata", nil, "custom_metadata filter as key=value (repeatable)")
	f.IntVar(&lf.limit, "limit", api.DefaultListLimit, "jobs per page")
	f.IntVar(&lf.offset, "offset", 0, "index of the first job")
	f.BoolVar(&lf.all, "all", false, "follow the pages to the end")
	lf.output.register(cmd, outputTable)
}

// noteMore tells a person reading the table that the list goes on; JSON stays one document.
func (lf *listFlags) noteMore(cmd *cobra.Command) {
	if !lf.output.json() {
		fmt.Fprintln(cmd.ErrOrStderr(), "more jobs follow: use --all, or --offset to page")
	}
}

// readList is the list the flags ask for: with --all every item from the first page on (all),
// else that one page (page, which also says whether more follow), with a note to a person
// reading the table when the list goes on. It is never nil, so JSON prints an empty list as [].
func readList[T any](cmd *cobra.Command, lf *listFlags, page func() (items []T, more bool, err error), all iter.Seq2[T, error]) ([]T, error) {
	items := []T{}
	if !lf.all {
		first, more, err := page()
		if err != nil {
			return nil, err
		}
		if more {
			lf.noteMore(cmd)
		}
		return append(items, first...), nil
	}
	for it, err := range all {
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, nil
}

// query is the list query the flags describe; limit and offset are set only when given, so
// the list's own defaults apply otherwise.
func (lf *listFlags) query(cmd *cobra.Command) (api.ListQuery, error) {
	q := api.ListQuery{Date: lf.date, BeforeDate: lf.beforeDate, AfterDate: lf.afterDate}
	if cmd.Flags().Changed("limit") {
		q.Limit = api.Int(lf.limit)
	}
	if cmd.Flags().Changed("offset") {
		q.Offset = api.Int(lf.offset)
	}
	for _, s := range lf.statuses {
		q.Status = append(q.Status, api.JobStatus(s))
	}
	for _, k := range lf.kinds {
		q.Kind = append(q.Kind, api.JobKind(k))
	}
	md, err := metadataObject(lf.metadata)
	if err != nil {
		return q, err
	}
	q.CustomMetadata = md
	return q, nil
}

const (
	outputTable = "table"
	outputJSON  = "json"
)

// outputFlag is -o of the commands that print records: a table for people, JSON for programs.
type outputFlag string

// register adds -o with its default, and checks the value before the command runs, so that a
// typo is refused before anything is opened or asked of the service.
func (o *outputFlag) register(cmd *cobra.Command, def outputFlag) {
	other := outputJSON
	if def == outputJSON {
		other = outputTable
	}
	cmd.Flags().StringVarP((*string)(o), "output", "o", string(def), "output: "+string(def)+" or "+other)
	cmd.PreRunE = func(*cobra.Command, []string) error { return checkOutput(string(*o)) }
}

func (o outputFlag) json() bool { return o == outputJSON }

// print writes v as JSON, or the table.
func (o outputFlag) print(w io.Writer, v any, table func(io.Writer) error) error {
	if o.json() {
		return writeJSON(w, v)
	}
	return table(w)
}

func checkOutput(output string) error {
	if output != outputTable && output != outputJSON {
		return fmt.Errorf("unknown output %q: use table or json", output)
	}
	return nil
}

// metadataObject turns key=value pairs into a JSON object of strings; nil for none.
func metadataObject(pairs []string) (json.RawMessage, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("metadata %q is not key=value", p)
		}
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode metadata: %w", err)
	}
	return b, nil
}
