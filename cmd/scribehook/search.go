package main

import (
	"context"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/store"
)

func newSearchCmd() *cobra.Command {
	var (
		lf           listFlags
		language     string
		translations bool
	)
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Search the utterances of every stored job and live session",
		Long: `Full-text search over the final transcripts of every job and live session in the local
store (as GET /v1/search): every term must match; "exact words" in double quotes is a phrase,
word* a prefix. Hits come newest job first, then in time order, with the matched words in
[brackets] in the table and <mark> in the JSON's highlight, and a link to the dashboard's job
page at that time. The job list's filters apply to the hits' jobs.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			lq, err := lf.query(cmd)
			if err != nil {
				return err
			}
			if err := lq.Validate(false); err != nil {
				return fmt.Errorf("filters: %w", err)
			}
			q := store.SearchQuery{Text: strings.Join(args, " "), List: lq, Language: language, Translations: translations}
			var (
				hits []store.SearchHit
				cfg  configs.Config
			)
			err = withStore(cmd, func(ctx context.Context, c configs.Config, st store.Store) error {
				cfg = c
				se, ok := st.(store.Searcher)
				if !ok {
					return fmt.Errorf("search: store %s does not search", c.Store.Driver)
				}
				hits, err = readList(cmd, &lf, func() ([]store.SearchHit, bool, error) {
					page, err := se.Search(ctx, q)
					if err != nil {
						return nil, false, fmt.Errorf("search: %w", err)
					}
					return page.Items, page.More, nil
				}, store.AllHits(ctx, se, q))
				return err
			})
			if err != nil {
				return err
			}
			if lf.output.json() {
				ui := strings.TrimRight(cfg.PublicURL, "/") + "/ui/"
				items := make([]receiver.SearchHit, len(hits))
				for i, h := range hits {
					items[i] = receiver.SearchHit{SearchHit: h, Link: ui + receiver.HitLink(h.JobID, h.Start)}
				}
				return writeJSON(cmd.OutOrStdout(), items)
			}
			return writeHitsTable(cmd.OutOrStdout(), hits)
		},
	}
	lf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&language, "language", "", "utterances of this language only (its code, e.g. en)")
	f.BoolVar(&translations, "translations", false, "search the translations too")
	return cmd
}

// writeHitsTable prints one hit a line, its matched words in brackets.
func writeHitsTable(w io.Writer, hits []store.SearchHit) error {
	marks := strings.NewReplacer("<mark>", "[", "</mark>", "]")
	return writeRows(w, "JOB\tKIND\tAT\tSPEAKER\tLANG\tTEXT", hits, func(h store.SearchHit) string {
		speaker := "-"
		if h.Speaker != nil {
			speaker = strconv.Itoa(*h.Speaker)
		}
		at := fmt.Sprintf("%s-%s", strconv.FormatFloat(h.Start, 'f', 1, 64), strconv.FormatFloat(h.End, 'f', 1, 64))
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", cell(h.JobID), cell(string(h.Kind)), at, speaker, cell(h.Language),
			cell(html.UnescapeString(marks.Replace(h.Highlight))))
	})
}
