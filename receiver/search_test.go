package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// indexJob stores a done pre-recorded job whose utterances are texts, one a second.
func indexJob(t *testing.T, h *harness, id string, created time.Time, meta string, texts ...string) {
	t.Helper()
	res, err := h.store.Ingest(t.Context(), []store.Delivery{{DedupeKey: "search:" + id, Route: "job",
		Kind: api.CallbackJobSuccess, Event: "transcription.success", JobID: id, PartitionKey: id, Body: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	err = h.store.Apply(t.Context(), res[0].ID, func(ctx context.Context, tx store.Tx) error {
		j := api.Job{ID: id, Kind: api.KindPreRecorded, Status: api.StatusDone, Version: 2, CreatedAt: api.NewTime(created)}
		if meta != "" {
			j.CustomMetadata = json.RawMessage(meta)
		}
		if err := tx.PutJob(ctx, store.JobRecord{Job: j}); err != nil {
			return err
		}
		var us []store.Utterance
		for i, text := range texts {
			us = append(us, store.Utterance{JobID: id, Ref: fmt.Sprint("r/", i), Start: float64(i) + 0.5, End: float64(i) + 1,
				Language: "en", Text: text})
		}
		return tx.IndexUtterances(ctx, us)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSearchRoute(t *testing.T) {
	h := newHarness(t)
	if _, err := h.store.Search(t.Context(), store.SearchQuery{Text: "probe"}); errors.Is(err, store.ErrSearchUnavailable) {
		r := h.read("/v1/search?q=hello")
		if r.status != 501 || !strings.Contains(string(r.body), "-tags sqlite_fts5") {
			t.Errorf("without FTS5: %d %s, want 501 naming the build tag", r.status, r.body)
		}
		t.Skip(err)
	}
	day := time.Date(2026, 11, 19, 10, 0, 0, 0, time.UTC)
	indexJob(t, h, "job/1", day, `{"team":"a"}`, "hello <world>", "nothing here", "hello again")
	indexJob(t, h, "job-2", day.Add(time.Hour), `{"team":"b"}`, "say hello")

	r := h.read("/v1/search?q=hello&limit=2")
	var page SearchPage
	if err := json.Unmarshal(r.body, &page); err != nil || r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	link := func(offset int) string {
		return "/v1/search?" + url.Values{"q": {"hello"}, "limit": {"2"}, "offset": {fmt.Sprint(offset)}}.Encode()
	}
	if page.First != link(0) || page.Current != link(0) || page.Next == nil || *page.Next != link(2) {
		t.Errorf("links: first %s current %s next %v", page.First, page.Current, page.Next)
	}
	want := []string{
		"job-2 0.5-1 say <mark>hello</mark> /ui/#/jobs/job-2?t=0.5",
		"job/1 0.5-1 <mark>hello</mark> &lt;world&gt; /ui/#/jobs/job%2F1?t=0.5",
	}
	if got := hitLines(page); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("page 1:\n got %q\nwant %q", got, want)
	}
	next, _ := url.Parse(*page.Next)
	page = SearchPage{}
	if r = h.read(next.RequestURI()); json.Unmarshal(r.body, &page) != nil || page.Next != nil {
		t.Fatalf("page 2: %d %s", r.status, r.body)
	}
	if got := hitLines(page); fmt.Sprint(got) != fmt.Sprint([]string{"job/1 2.5-3 <mark>hello</mark> again /ui/#/jobs/job%2F1?t=2.5"}) {
		t.Errorf("page 2: %q", got)
	}
	// The raw answer carries the marks as they are, not JSON's \u003c.
	if !strings.Contains(string(r.body), `"highlight":"<mark>hello</mark> again"`) {
		t.Errorf("answer: %s", r.body)
	}

	r = h.read("/v1/search?q=hello&custom_metadata=" + url.QueryEscape(`{"team":"a"}`))
	page = SearchPage{}
	if json.Unmarshal(r.body, &page) != nil || len(page.Items) != 2 || page.Items[0].JobID != "job/1" {
		t.Errorf("custom_metadata filter: %d %s", r.status, r.body)
	}

	for _, tc := range []struct {
		path string
		want string
	}{
		{"/v1/search", "q is required"},
		{"/v1/search?q=%22%22", "invalid search query: no words"},
		{"/v1/search?q=x&translations=maybe", "translations must be true or false"},
		{"/v1/search?q=x&limit=1000", "limit"},
		{"/v1/search?q=x&status=bogus", "status"},
	} {
		r := h.read(tc.path)
		if r.status != 400 || !strings.Contains(string(r.body), tc.want) {
			t.Errorf("%s: %d %s, want 400 with %q", tc.path, r.status, r.body, tc.want)
		}
	}
	if r := h.do("GET", "/v1/search?q=hello", nil, nil); r.status != 401 {
		t.Errorf("without the token: %d", r.status)
	}
}

func hitLines(p SearchPage) []string {
	var out []string
	for _, h := range p.Items {
		out = append(out, fmt.Sprintf("%s %g-%g %s %s", h.JobID, h.Start, h.End, h.Highlight, h.Link))
	}
	return out
}
