package submitter

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/api"
)

// pageServer answers a list endpoint with pages of ids; next(offset) gives each page's next
// URL (nil for none) so that tests can script well- and ill-behaved servers.
func pageServer(t *testing.T, pages [][]string, next func(base string, page int) *string) *recorder {
	t.Helper()
	var srv *recorder
	srv = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		page := 0
		if o := r.URL.Query().Get("offset"); o != "" {
			fmt.Sscan(o, &page)
			page /= 2
		}
		items := []api.Job{}
		for _, id := range pages[min(page, len(pages)-1)] {
			items = append(items, api.Job{ID: id, Version: 2, Status: api.StatusDone, Kind: api.KindPreRecorded})
		}
		out := api.Page{
			First:   srv.URL + r.URL.Path + "?offset=0&limit=2",
			Current: fmt.Sprintf("%s%s?offset=%d&limit=2", srv.URL, r.URL.Path, page*2),
			Next:    next(srv.URL+r.URL.Path, page),
			Items:   items,
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	return srv
}

func ptr(s string) *string { return &s }

func collect(t *testing.T, seq func(func(api.Job, error) bool)) ([]string, error) {
	t.Helper()
	var ids []string
	for job, err := range seq {
		if err != nil {
			return ids, err
		}
		ids = append(ids, job.ID)
	}
	return ids, nil
}

func TestAllWalksPagesUntilNullNext(t *testing.T) {
	pages := [][]string{{"a", "b"}, {"c", "d"}, {"e"}}
	srv := pageServer(t, pages, func(base string, page int) *string {
		if page == 2 {
			return nil
		}
		// The server writes its parameters in its own order; the client must follow as given.
		return ptr(fmt.Sprintf("%s?limit=2&offset=%d&status=done", base, (page+1)*2))
	})
	c, _ := newTestClient(t, srv.URL)
	q := api.ListQuery{
		Limit:          api.Int(2),
		Status:         []api.JobStatus{api.StatusDone, api.StatusError},
		AfterDate:      "2026-11-01T00:00:00Z",
		CustomMetadata: json.RawMessage(`{ "user": "ann" }`),
	}
	ids, err := collect(t, c.All(context.Background(), EndpointPreRecorded, q))
	if err != nil {
		t.Fatalf("all: %v", err)
	}
	if want := []string{"a", "b", "c", "d", "e"}; !slices.Equal(ids, want) {
		t.Fatalf("ids = %v, want %v", ids, want)
	}
	if srv.count() != 3 {
		t.Fatalf("requests = %d, want 3", srv.count())
	}
	first, _ := srv.request(0)
	wantQuery := url.Values{
		"limit":           {"2"},
		"status":          {"done", "error"},
		"after_date":      {"2026-11-01T00:00:00Z"},
		"custom_metadata": {`{ "user": "ann" }`},
	}
	if first.URL.Path != "/v2/pre-recorded" || first.URL.RawQuery != wantQuery.Encode() {
		t.Fatalf("first request = %s, want query %s", first.URL, wantQuery.Encode())
	}
	for i, want := range []string{"limit=2&offset=2&status=done", "limit=2&offset=4&status=done"} {
		req, _ := srv.request(i + 1)
		if req.URL.RawQuery != want || req.Header.Get("x-service-key") != testKey {
			t.Fatalf("page %d request = %s key %q", i+2, req.URL, req.Header.Get("x-service-key"))
		}
	}
}

func TestAllStopsWhenTheCallerBreaks(t *testing.T) {
	srv := pageServer(t, [][]string{{"a", "b"}, {"c", "d"}}, func(base string, page int) *string {
		return ptr(fmt.Sprintf("%s?offset=%d&limit=2", base, (page+1)*2))
	})
	c, _ := newTestClient(t, srv.URL)
	for job, err := range c.All(context.Background(), EndpointLive, api.ListQuery{}) {
		if err != nil || job.ID != "a" {
			t.Fatalf("first = %q, %v", job.ID, err)
		}
		break
	}
	if srv.count() != 1 {
		t.Fatalf("requests = %d, want 1", srv.count())
	}
}

func TestAllRefusesForeignHostNext(t *testing.T) {
	evil := newRecorder(t, reply(200, `{"items":[],"next":null}`))
	srv := pageServer(t, [][]string{{"a"}}, func(string, int) *string {
		return ptr(evil.URL + "/v2/pre-recorded?offset=2")
	})
	c, _ := newTestClient(t, srv.URL)
	ids, err := collect(t, c.All(context.Background(), EndpointTranscription, api.ListQuery{Kind: []api.JobKind{api.KindLive}}))
	if err == nil || !strings.Contains(err.Error(), "is not on the service host") {
		t.Fatalf("err = %v", err)
	}
	if !slices.Equal(ids, []string{"a"}) || evil.count() != 0 {
		t.Fatalf("ids = %v, foreign host hit %d times", ids, evil.count())
	}
	if req, _ := srv.request(0); req.URL.Path != "/v2/transcription" || req.URL.RawQuery != "kind=live" {
		t.Fatalf("first request = %s", req.URL)
	}

	// Same host but another scheme (a downgrade from https would expose the key) is refused too.
	c, _ = newTestClient(t, "https://service.example")
	if _, err := c.NextPage(context.Background(), "http://service.example/v2/live?offset=2"); err == nil {
		t.Fatal("scheme change accepted")
	}
}

func TestAllGuardsAgainstARepeatingNext(t *testing.T) {
	srv := pageServer(t, [][]string{{"a", "b"}, {"c", "d"}}, func(base string, page int) *string {
		if page == 1 {
			return ptr(base + "?limit=2&offset=0") // back to the first page, parameters reordered
		}
		return ptr(base + "?offset=2&limit=2")
	})
	c, _ := newTestClient(t, srv.URL)
	ids, err := collect(t, c.All(context.Background(), EndpointPreRecorded, api.ListQuery{}))
	if err == nil || !strings.Contains(err.Error(), "repeats an earlier page") {
		t.Fatalf("err = %v", err)
	}
	if !slices.Equal(ids, []string{"a", "b", "c", "d"}) || srv.count() != 2 {
		t.Fatalf("ids = %v, requests = %d", ids, srv.count())
	}
}

func TestAllYieldsTheFirstError(t *testing.T) {
	srv := newRecorder(t, reply(401, `{"statusCode":401,"message":"missing key"}`))
	c, _ := newTestClient(t, srv.URL)
	ids, err := collect(t, c.All(context.Background(), EndpointPreRecorded, api.ListQuery{}))
	if !IsStatus(err, 401) || len(ids) != 0 {
		t.Fatalf("ids = %v, err = %v", ids, err)
	}
}

func TestListRefusesUnknownEndpoint(t *testing.T) {
	c, _ := newTestClient(t, "http://127.0.0.1:1")
	if _, err := c.List(context.Background(), ListEndpoint("/v2/other"), api.ListQuery{}); err == nil {
		t.Fatal("unknown endpoint accepted")
	}
}

func TestSameOriginFillsDefaultPorts(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"http://h", "http://h:80/x", true},
		{"https://H.example", "https://h.example:443", true},
		{"http://h:8788", "http://h:8789", false},
		{"http://127.0.0.1:8788", "http://localhost:8788", false},
		{"https://h", "http://h:443", false},
	}
	for _, tc := range cases {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if got := sameOrigin(a, b); got != tc.want {
			t.Errorf("sameOrigin(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}
