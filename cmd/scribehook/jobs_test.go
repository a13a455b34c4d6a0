package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// jobsEnv is a store filled the way serve fills it: job records, a live session with its
// messages applied from inbox rows, an artifact, and quarantined deliveries.
type jobsEnv struct {
	*cliEnv
	done, live string
}

func newJobsEnv(t *testing.T) *jobsEnv {
	t.Helper()
	e := newCLIEnv(t, nil)
	st := e.openStore()
	ctx := context.Background()
	at := func(min int) time.Time { return time.Date(2026, 11, 20, 10, min, 0, 0, time.UTC) }
	je := &jobsEnv{cliEnv: e, done: "2f1c7f0e-5d0c-4c1e-9c55-0d8a3c2b1a00", live: "7d3c1b7e-0000-4000-8000-00000000live"}
	put := func(rec store.JobRecord) {
		if err := st.PutJob(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	put(store.JobRecord{
		Job: api.Job{ID: je.done, Version: 2, Kind: api.KindPreRecorded, Status: api.StatusDone, CreatedAt: api.NewTime(at(1)),
			CompletedAt: api.PtrTime(at(2)), CustomMetadata: json.RawMessage(`{"team":"captions"}`),
			File: &api.File{Filename: "interview.mp3", AudioDuration: 754.26},
			Result: api.RawResult(&api.Result{Metadata: &api.Metadata{AudioDuration: 754.26}, Transcription: &api.Transcription{
				FullTranscript: "Welcome to scribehook. Callbacks arrive, are stored and become subtitles.",
				Utterances:     []api.Utterance{{Text: "Welcome to scribehook."}, {Text: "Callbacks arrive, are stored and become subtitles."}},
			}})},
		Local: store.Local{Source: "submit", ReceivedAt: at(2), UpdatedAt: at(2), Deliveries: 1},
	})
	put(store.JobRecord{
		Job:   api.Job{ID: "e", Version: 2, Kind: api.KindPreRecorded, Status: api.StatusError, CreatedAt: api.NewTime(at(3)), ErrorCode: api.Int(422)},
		Local: store.Local{Source: "callback", ReceivedAt: at(3), UpdatedAt: at(3), Deliveries: 1, ErrorMessage: "audio could not be downloaded"},
	})
	put(store.JobRecord{
		Job:   api.Job{ID: je.live, Version: 2, Kind: api.KindLive, Status: api.StatusProcessing, CreatedAt: api.NewTime(at(4))},
		Local: store.Local{Source: "submit", UpdatedAt: at(4)},
	})
	// Three live messages and an artifact, applied from inbox rows as the handlers do.
	for i, typ := range []api.MessageType{api.MessageStartSession, api.MessageTranscript, api.MessageEndSession} {
		res, err := st.Ingest(ctx, []store.Delivery{{
			DedupeKey: fmt.Sprintf("live-%d", i), Route: "job", Kind: api.CallbackLiveMessage, Event: "live." + string(typ),
			JobID: je.live, MessageType: typ, PartitionKey: je.live, Body: []byte(`{}`), ReceivedAt: at(5),
		}})
		if err != nil {
			t.Fatal(err)
		}
		err = st.Apply(ctx, res[0].ID, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.AppendLiveMessage(ctx, store.LiveMessage{SessionID: je.live, Type: typ, CreatedAt: at(5), ReceivedAt: at(5),
				InboxID: res[0].ID, Payload: json.RawMessage(`{"type":"` + string(typ) + `"}`)})
			if err != nil || i > 0 {
				return err
			}
			return tx.PutArtifact(ctx, store.Artifact{JobID: je.done, Name: "interview.srt", Format: "srt", Language: "en",
				Path: "/out/interview.srt", Size: 120, CreatedAt: at(5)})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := st.Ingest(ctx, []store.Delivery{
		{Route: "account", Quarantine: "body is not JSON", Body: []byte("\x00\x01garbage\tbody that goes on and on and on and on"), ReceivedAt: at(6)},
		{Route: "job", Quarantine: "unclassified callback body: event is missing", Body: []byte(`{"id":"x","payload":{}}`), ReceivedAt: at(7)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return je
}

func TestJobsListTableAndFilters(t *testing.T) {
	e := newJobsEnv(t)
	out, _, err := e.run(nil, "jobs", "list")
	if err != nil {
		t.Fatal(err)
	}
	want := "" +
		"ID                                    KIND          STATUS      CREATED              DURATION  FILE\n" +
		"7d3c1b7e-0000-4000-8000-00000000live  live          processing  2026-11-20 10:04:00  -         -\n" +
		"e                                     pre-recorded  error       2026-11-20 10:03:00  -         -\n" +
		"2f1c7f0e-5d0c-4c1e-9c55-0d8a3c2b1a00  pre-recorded  done        2026-11-20 10:01:00  12m34.3s  interview.mp3\n"
	if out != want {
		t.Fatalf("table =\n%s\nwant\n%s", out, want)
	}

	out, _, err = e.run(nil, "jobs", "list", "--status", "done,error", "--kind", "pre-recorded", "--metadata", "team=captions", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var items []map[string]any
	if err := json.Unmarshal([]byte(out), &items); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if len(items) != 1 || items[0]["id"] != e.done || items[0]["local"].(map[string]any)["source"] != "submit" {
		t.Fatalf("items = %v", items)
	}

	// Paging: one page hints at more, --all follows.
	out, errOut, err := e.run(nil, "jobs", "list", "--limit", "2")
	if err != nil || strings.Count(out, "\n") != 3 || !strings.Contains(errOut, "--all") {
		t.Fatalf("one page: %v\n%s%s", err, out, errOut)
	}
	out, _, err = e.run(nil, "jobs", "list", "--limit", "2", "--all")
	if err != nil || strings.Count(out, "\n") != 4 {
		t.Fatalf("all pages: %v\n%s", err, out)
	}

	_, _, err = e.run(nil, "jobs", "list", "--status", "finished", "--date", "yesterday")
	if err == nil || !strings.Contains(err.Error(), "date must be a date in YYYY-MM-DD form") || !strings.Contains(err.Error(), `status must be one of`) {
		t.Fatalf("err = %v", err)
	}
}

func TestJobsShow(t *testing.T) {
	e := newJobsEnv(t)
	out, _, err := e.run(nil, "jobs", "show", e.done)
	if err != nil {
		t.Fatal(err)
	}
	want := "" +
		"id          2f1c7f0e-5d0c-4c1e-9c55-0d8a3c2b1a00\n" +
		"kind        pre-recorded\n" +
		"status      done\n" +
		"created     2026-11-20 10:01:00\n" +
		"completed   2026-11-20 10:02:00\n" +
		"metadata    {\"team\":\"captions\"}\n" +
		"audio       754.3s\n" +
		"utterances  2\n" +
		"transcript  Welcome to scribehook. Callbacks arrive, are stored and become subtitles.\n" +
		"source      submit\n" +
		"received    2026-11-20 10:02:00\n" +
		"updated     2026-11-20 10:02:00\n" +
		"deliveries  1\n" +
		"artifact    interview.srt (srt, en) /out/interview.srt\n"
	if out != want {
		t.Fatalf("show =\n%s\nwant\n%s", out, want)
	}

	out, _, err = e.run(nil, "jobs", "show", e.live)
	if err != nil || !strings.Contains(out, "live messages  3\n") || !strings.Contains(out, "received       -\n") {
		t.Fatalf("live: %v\n%s", err, out)
	}
	out, _, err = e.run(nil, "jobs", "show", e.live, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		ID    string `json:"id"`
		Kind  string `json:"kind"`
		Local struct {
			Source       string `json:"source"`
			LiveMessages int    `json:"live_messages"`
			Artifacts    []any  `json:"artifacts"`
		} `json:"local"`
	}
	if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.ID != e.live || rec.Local.LiveMessages != 3 || rec.Local.Source != "submit" || rec.Local.Artifacts == nil {
		t.Fatalf("json = %v\n%s", err, out)
	}
	// The service's members come first, in its order; local is last.
	if !strings.HasPrefix(out, "{\n  \"id\": ") || !strings.Contains(out, "\"local\": {") {
		t.Fatalf("json =\n%s", out)
	}

	out, _, err = e.run(nil, "jobs", "show", "e")
	if err != nil || !strings.Contains(out, "error code  422\n") || !strings.Contains(out, "error       audio could not be downloaded\n") {
		t.Fatalf("error job: %v\n%s", err, out)
	}
	_, _, err = e.run(nil, "jobs", "show", "nope")
	if err == nil || !strings.HasPrefix(err.Error(), "job nope is not in the local store") {
		t.Fatalf("err = %v", err)
	}
}

func TestJobsQuarantine(t *testing.T) {
	e := newJobsEnv(t)
	out, _, err := e.run(nil, "jobs", "quarantine")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID  ROUTE    RECEIVED             SIZE  REASON") ||
		!strings.Contains(lines[1], "job      2026-11-20 10:07:00  23    unclassified callback body: event is missing  {\"id\":\"x\",\"payload\":{}}") ||
		!strings.Contains(lines[2], `account  2026-11-20 10:06:00  48    body is not JSON`) ||
		!strings.HasSuffix(lines[2], `\x00\x01garbage\tbody that goes on and on and o…`) {
		t.Fatalf("table =\n%s", out)
	}
	out, _, err = e.run(nil, "jobs", "quarantine", "-n", "1", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var items []struct {
		ID         int64     `json:"id"`
		Route      string    `json:"route"`
		Reason     string    `json:"reason"`
		ReceivedAt time.Time `json:"received_at"`
		Size       int       `json:"size"`
		FirstBytes string    `json:"first_bytes"`
	}
	if err := json.Unmarshal([]byte(out), &items); err != nil || len(items) != 1 || items[0].Route != "job" || items[0].Size != 23 ||
		items[0].FirstBytes != `{"id":"x","payload":{}}` || !items[0].ReceivedAt.Equal(time.Date(2026, 11, 20, 10, 7, 0, 0, time.UTC)) {
		t.Fatalf("json = %v\n%s", err, out)
	}
	if _, _, err := e.run(nil, "jobs", "quarantine", "-n", "0"); err == nil {
		t.Fatal("-n 0 accepted")
	}
}

// The commands read the store the configuration names; with no file, the defaults and the
// environment decide.
func TestJobsUseTheEnvironmentWithoutAFile(t *testing.T) {
	e := newJobsEnv(t)
	dir := t.TempDir()
	t.Setenv("SCRIBEHOOK_STORE_DSN", filepath.Join(dir, "other.db"))
	out, _, err := runCmd(context.Background(), nil, "jobs", "list")
	if err != nil {
		t.Fatal(err)
	}
	if out != "ID  KIND  STATUS  CREATED  DURATION  FILE\n" {
		t.Fatalf("other store listed:\n%s", out)
	}
	t.Setenv("SCRIBEHOOK_STORE_DSN", e.dbPath)
	t.Setenv(envConfig, e.cfgPath)
	if out, _, err = runCmd(context.Background(), nil, "jobs", "list"); err != nil || strings.Count(out, "\n") != 4 {
		t.Fatalf("SCRIBEHOOK_CONFIG: %v\n%s", err, out)
	}
}
