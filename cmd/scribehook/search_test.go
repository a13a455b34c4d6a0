package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/receiver"
)

// TestE2ESearchThroughServe: serve applies a job's result and a live session's finals posted
// on a static route, and finds them by search through GET /v1/search and the search command
// (beside the running serve), with the same hits, marks and links; a build without FTS5 says
// which tag it lacks, on both.
func TestE2ESearchThroughServe(t *testing.T) {
	readToken := "cmVhZC10b2tlbi1mb3Itc2VhcmNoLXRlc3RzLTQy"
	dir, db := tempDB(t)
	addr := "127.0.0.1:" + freePort(t)
	// Artifacts and the file sink in the test's directory, not serve's defaults under the
	// working directory.
	path := writeSQLiteConfig(t, dir, db, "listen: "+addr+"\n", "public_url: http://"+addr+"\n",
		"routes: [{name: partner, token_env: TEST_PARTNER_TOKEN}]\n",
		fmt.Sprintf("subtitles: {dir: %q}\n", filepath.Join(dir, "artifacts")),
		fmt.Sprintf("sinks: [{name: files, kind: file, dir: %q, events: [\"*\"]}]\n", filepath.Join(dir, "out")))
	t.Setenv("TEST_PARTNER_TOKEN", partnerToken)
	t.Setenv("SCRIBEHOOK_READ_TOKEN", readToken)
	t.Setenv("SCRIBEHOOK_API_KEY", "")
	startServe(t, path, addr)
	base := "http://" + addr
	post := func(body string) {
		t.Helper()
		status, b := httpDo(t, http.MethodPost, base+"/v1/callbacks/"+partnerToken, http.Header{"Content-Type": {"application/json"}}, []byte(body))
		if status != http.StatusOK {
			t.Fatalf("callback: %d %s", status, b)
		}
	}
	search := func(query string) (int, []byte) {
		return httpDo(t, http.MethodGet, base+"/v1/search?"+query, http.Header{"Authorization": {"Bearer " + readToken}}, nil)
	}
	if status, b := search("q=probe"); status == http.StatusNotImplemented {
		if !strings.Contains(string(b), "-tags sqlite_fts5") {
			t.Errorf("without FTS5: %s", b)
		}
		_, _, err := runCmd(t.Context(), nil, "--config", path, "search", "probe")
		if err == nil || !strings.Contains(err.Error(), "-tags sqlite_fts5") {
			t.Errorf("search command without FTS5: %v", err)
		}
		t.Skip("built without -tags sqlite_fts5")
	}

	post(`{"id":"job-1","event":"transcription.success","payload":{"metadata":{"audio_duration":9},` +
		`"transcription":{"full_transcript":"","languages":["en"],"utterances":[` +
		`{"start":0.5,"end":2,"speaker":0,"text":"Welcome to the budget meeting","words":[]},` +
		`{"start":12.5,"end":14,"speaker":1,"text":"The budget is <approved>","words":[]}]}}}`)
	final := func(n int, text string) string {
		return fmt.Sprintf(`{"id":"live-1","event":"live.transcript","payload":{"session_id":"live-1",`+
			`"created_at":"2026-11-24T10:00:0%dZ","type":"transcript","data":{"id":"u%d","is_final":true,`+
			`"utterance":{"start":%d,"end":%d.5,"text":%q,"language":"en","words":[]}}}}`, n, n, n, n, text)
	}
	post(final(1, "live budget talk"))
	post(final(2, "nothing to find"))
	post(final(1, "live budget talk")) // the same delivery again: one hit

	var page receiver.SearchPage
	testwait.For(t, "the three budget utterances searchable", 30*time.Second, func() bool {
		status, b := search("q=budget")
		page = receiver.SearchPage{}
		return status == http.StatusOK && json.Unmarshal(b, &page) == nil && len(page.Items) == 3
	})
	got := []string{}
	for _, h := range page.Items {
		got = append(got, fmt.Sprintf("%s %s %g %s %s", h.JobID, h.Kind, h.Start, h.Highlight, h.Link))
	}
	// The session was created by its first callback, after the job: newest first.
	want := []string{
		"live-1 live 1 live <mark>budget</mark> talk " + base + "/ui/#/jobs/live-1?t=1",
		"job-1 pre-recorded 0.5 Welcome to the <mark>budget</mark> meeting " + base + "/ui/#/jobs/job-1?t=0.5",
		"job-1 pre-recorded 12.5 The <mark>budget</mark> is &lt;approved&gt; " + base + "/ui/#/jobs/job-1?t=12.5",
	}
	if !slices.Equal(got, want) {
		t.Errorf("GET /v1/search?q=budget\n got %q\nwant %q", got, want)
	}
	if status, b := search("q=" + url.QueryEscape(`"budget meeting"`) + "&kind=pre-recorded&limit=1"); status != http.StatusOK ||
		!strings.Contains(string(b), `"highlight":"Welcome to the <mark>budget meeting</mark>"`) || !strings.Contains(string(b), `"next":null`) {
		t.Errorf("phrase of one kind: %d %s", status, b)
	}

	// The command, beside the running serve, finds the same.
	out, _, err := runCmd(t.Context(), nil, "--config", path, "search", "-o", "json", "budget")
	if err != nil {
		t.Fatal(err)
	}
	var hits []receiver.SearchHit
	if err := json.Unmarshal([]byte(out), &hits); err != nil || len(hits) != 3 {
		t.Fatalf("search -o json: %v %s", err, out)
	}
	for i, h := range hits {
		if h.JobID != page.Items[i].JobID || h.Highlight != page.Items[i].Highlight || h.Link != page.Items[i].Link {
			t.Errorf("command hit %d = %+v, route's %+v", i, h, page.Items[i])
		}
	}
	out, stderr, err := runCmd(t.Context(), nil, "--config", path, "search", "--limit", "1", "budget", "talk")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "JOB") || !strings.Contains(lines[1], "live [budget] [talk]") ||
		!strings.Contains(lines[1], "1.0-1.5") || stderr != "" {
		t.Errorf("search table:\n%s\nstderr %s", out, stderr)
	}
	if _, _, err := runCmd(t.Context(), nil, "--config", path, "search", `""`); err == nil || !strings.Contains(err.Error(), "no words") {
		t.Errorf("search of no words: %v", err)
	}
}
