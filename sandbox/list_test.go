package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/submitter"
)

// seedJobs creates n pre-recorded jobs (every third one fails on missing audio) and waits for
// them all to finish; it returns the ids in creation order.
func seedJobs(t *testing.T, e *env, n int) []string {
	t.Helper()
	good := e.files.put("/list/a.wav", speechLike(t, 1, [][2]float64{{0.2, 0.8}}, 16000))
	ids := make([]string, 0, n)
	for i := 0; i < n; i++ {
		audioURL := good
		if i%3 == 2 {
			audioURL = e.files.srv.URL + "/list/missing.wav"
		}
		created, err := e.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{
			AudioURL:       audioURL,
			CustomMetadata: json.RawMessage(fmt.Sprintf(`{"batch":"b%d","i":%d,"tags":{"team":"t%d","env":"prod"}}`, i%2, i, i%4)),
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, created.ID)
	}
	for _, id := range ids {
		e.waitJob(id, api.KindPreRecorded)
	}
	return ids
}

func TestPagingWalkOver45Jobs(t *testing.T) {
	e := newEnv(t, func(c *sandboxConfig) { c.Workers = 4 })
	ids := seedJobs(t, e, 45)
	ctx := context.Background()

	page, err := e.client.ListPreRecorded(ctx, api.ListQuery{Limit: api.Int(10)})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 10 || page.Next == nil {
		t.Fatalf("first page: %d items, next %v", len(page.Items), page.Next)
	}
	// Newest first.
	if page.Items[0].ID != ids[44] || page.Items[9].ID != ids[35] {
		t.Errorf("order: first %s last %s", page.Items[0].ID, page.Items[9].ID)
	}
	base := e.svc.URL + "/v2/pre-recorded?"
	if page.First != base+"limit=10&offset=0" || page.Current != base+"limit=10&offset=0" || *page.Next != base+"limit=10&offset=10" {
		t.Errorf("links: first %s current %s next %s", page.First, page.Current, *page.Next)
	}
	// Walk by following next by hand: 5 pages, 45 distinct jobs, the last with next null.
	seen := map[string]bool{}
	pages := 0
	for {
		pages++
		for _, j := range page.Items {
			if seen[j.ID] {
				t.Fatalf("job %s on two pages", j.ID)
			}
			seen[j.ID] = true
		}
		if page.Next == nil {
			break
		}
		page, err = e.client.NextPage(ctx, *page.Next)
		if err != nil {
			t.Fatal(err)
		}
	}
	if pages != 5 || len(seen) != 45 || len(page.Items) != 5 {
		t.Errorf("walk: %d pages, %d jobs, last page %d items", pages, len(seen), len(page.Items))
	}
	// The iterator gives the same 45 in the same order.
	var walked []string
	for j, err := range e.client.All(ctx, submitter.ListEndpoint("/v2/pre-recorded"), api.ListQuery{Limit: api.Int(7)}) {
		if err != nil {
			t.Fatal(err)
		}
		walked = append(walked, j.ID)
	}
	if len(walked) != 45 || walked[0] != ids[44] || walked[44] != ids[0] {
		t.Errorf("iterator walked %d", len(walked))
	}
	// Default limit 20; an offset past the end is an empty page with next null.
	page, _ = e.client.ListPreRecorded(ctx, api.ListQuery{})
	if len(page.Items) != 20 || page.Next == nil || !strings.Contains(*page.Next, "offset=20") {
		t.Errorf("default page: %d items next %v", len(page.Items), page.Next)
	}
	page, _ = e.client.ListPreRecorded(ctx, api.ListQuery{Offset: api.Int(100)})
	if len(page.Items) != 0 || page.Next != nil {
		t.Errorf("past the end: %d items next %v", len(page.Items), page.Next)
	}
}

func TestListFilters(t *testing.T) {
	e := newEnv(t, nil)
	ids := seedJobs(t, e, 12)
	mid := time.Now().UTC()
	time.Sleep(20 * time.Millisecond)
	later := seedJobs(t, e, 3)
	ctx := context.Background()
	// A live session too, so kind filters have something to tell apart.
	live, err := e.client.CreateLive(ctx, api.LiveRequest{}, "")
	if err != nil {
		t.Fatal(err)
	}

	count := func(q api.ListQuery, endpoint string) (int, api.Page) {
		t.Helper()
		q.Limit = api.Int(100)
		page, err := e.client.List(ctx, submitter.ListEndpoint(endpoint), q)
		if err != nil {
			t.Fatalf("list %s %+v: %v", endpoint, q, err)
		}
		return len(page.Items), page
	}
	today := time.Now().UTC().Format("2006-01-02")
	cases := []struct {
		name     string
		endpoint string
		q        api.ListQuery
		want     int
	}{
		{"all pre-recorded", "/v2/pre-recorded", api.ListQuery{}, 15},
		{"status error", "/v2/pre-recorded", api.ListQuery{Status: []api.JobStatus{api.StatusError}}, 5},
		{"status done or error", "/v2/pre-recorded", api.ListQuery{Status: []api.JobStatus{api.StatusDone, api.StatusError}}, 15},
		{"status queued", "/v2/pre-recorded", api.ListQuery{Status: []api.JobStatus{api.StatusQueued}}, 0},
		{"transcription both kinds", "/v2/transcription", api.ListQuery{}, 16},
		{"transcription kind live", "/v2/transcription", api.ListQuery{Kind: []api.JobKind{api.KindLive}}, 1},
		{"transcription kind pre-recorded", "/v2/transcription", api.ListQuery{Kind: []api.JobKind{api.KindPreRecorded}}, 15},
		{"live list", "/v2/live", api.ListQuery{}, 1},
		{"live status queued", "/v2/live", api.ListQuery{Status: []api.JobStatus{api.StatusQueued}}, 1},
		{"date today", "/v2/pre-recorded", api.ListQuery{Date: today}, 15},
		{"date other day", "/v2/pre-recorded", api.ListQuery{Date: "2001-01-01"}, 0},
		{"after mid", "/v2/pre-recorded", api.ListQuery{AfterDate: mid.Format(time.RFC3339Nano)}, 3},
		{"before mid", "/v2/pre-recorded", api.ListQuery{BeforeDate: mid.Format(time.RFC3339Nano)}, 12},
		{"range", "/v2/pre-recorded", api.ListQuery{AfterDate: mid.Add(-time.Hour).Format(time.RFC3339), BeforeDate: mid.Format(time.RFC3339Nano)}, 12},
		{"metadata batch", "/v2/pre-recorded", api.ListQuery{CustomMetadata: json.RawMessage(`{"batch":"b0"}`)}, 8},
		{"metadata nested subset", "/v2/pre-recorded", api.ListQuery{CustomMetadata: json.RawMessage(`{"tags":{"team":"t1"}}`)}, 4},
		{"metadata number", "/v2/pre-recorded", api.ListQuery{CustomMetadata: json.RawMessage(`{"i":3}`)}, 1},
		{"metadata two keys", "/v2/pre-recorded", api.ListQuery{CustomMetadata: json.RawMessage(`{"batch":"b1","tags":{"env":"prod","team":"t3"}}`)}, 3},
		{"metadata no match", "/v2/pre-recorded", api.ListQuery{CustomMetadata: json.RawMessage(`{"batch":"b9"}`)}, 0},
		{"combined", "/v2/pre-recorded", api.ListQuery{Status: []api.JobStatus{api.StatusDone}, CustomMetadata: json.RawMessage(`{"batch":"b0"}`)}, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, page := count(tc.q, tc.endpoint)
			if got != tc.want {
				t.Errorf("%d items, want %d", got, tc.want)
			}
			// The page links carry the filters.
			u, err := url.Parse(page.Current)
			if err != nil || u.Scheme != "http" || u.Host != strings.TrimPrefix(e.svc.URL, "http://") {
				t.Fatalf("current = %q", page.Current)
			}
			got2, err := e.client.NextPage(ctx, page.Current)
			if err != nil || len(got2.Items) != got {
				t.Errorf("following current gave %d items (%v), want %d", len(got2.Items), err, got)
			}
		})
	}
	_ = ids
	_ = later
	_ = live
	// kind is refused on the live list.
	status, body, _ := e.raw("GET", "/v2/live?kind=live", testKey, "", nil)
	checkEnvelope(t, status, body, 400, "/v2/live", "")
	status, body, _ = e.raw("GET", "/v2/pre-recorded?status=finished&limit=101&offset=-1", testKey, "", nil)
	env := checkEnvelope(t, status, body, 400, "/v2/pre-recorded", "")
	if len(env.ValidationErrors) != 3 {
		t.Errorf("validation_errors = %q, want 3", env.ValidationErrors)
	}
}
