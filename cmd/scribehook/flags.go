package main

import (
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
	output                      string
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
	f.StringVarP(&lf.output, "output", "o", "table", "output: table or json")
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
