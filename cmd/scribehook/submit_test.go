package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
	"github.com/scribehook/scribehook/submitter"
)

const cliTestKey = "sk-cli-test-0123456789"

// cliEnv is the loop the commands run in: the sandbox with the scripted engine, a file
// server with the demo recording, a stand-in of serve that stores what the callbacks carry in
// the same SQLite store as the commands, and a configuration file pointing at all of them.
type cliEnv struct {
	t       *testing.T
	sandbox *sandboxtest.Service
	client  *submitter.Client
	files   *sandboxtest.Files
	serve   *fakeServe
	dbPath  string
	cfgPath string
}

func newCLIEnv(t *testing.T, mutate func(*sandbox.Config)) *cliEnv {
	t.Helper()
	scfg := sandbox.Config{
		APIKey:    cliTestKey,
		Callbacks: sandbox.CallbackPolicy{Schedule: []time.Duration{20 * time.Millisecond, 20 * time.Millisecond}, Timeout: 5 * time.Second},
	}
	if mutate != nil {
		mutate(&scfg)
	}
	w, client := startWorld(t, scfg)
	t.Cleanup(func() { _ = w.Close() })

	dir, db := tempDB(t)
	e := &cliEnv{t: t, sandbox: w.Service, client: client, files: w.Files, dbPath: db}
	e.serve = newFakeServe(t, e.dbPath)
	e.cfgPath = filepath.Join(dir, "scribehook.yaml")
	e.writeConfig(e.serve.URL, e.sandbox.URL)
	t.Setenv("SCRIBEHOOK_API_KEY", cliTestKey)
	t.Setenv(envConfig, "")
	return e
}

// writeConfig points the configuration file at serve on publicURL and the service at
// serviceURL.
func (e *cliEnv) writeConfig(publicURL, serviceURL string) {
	e.t.Helper()
	cfg := fmt.Sprintf("public_url: %s\nservice: {base_url: %s}\nstore: {dsn: %s, synchronous: normal}\n", publicURL, serviceURL, e.dbPath)
	writeFile(e.t, e.cfgPath, []byte(cfg))
}

// run executes the root command with args after --config.
func (e *cliEnv) run(stdin io.Reader, args ...string) (string, string, error) {
	e.t.Helper()
	return runCmd(context.Background(), stdin, append([]string{"--config", e.cfgPath}, args...)...)
}

func (e *cliEnv) openStore() *sqlite.Store {
	e.t.Helper()
	st := teststore.OpenSQLite(e.t, sqlite.Config{Path: e.dbPath, Synchronous: "normal"})
	return st
}

// callback is one request the stand-in of serve received.
type callback struct {
	Method string
	Token  string
	JobID  string // the job the token is bound to when the callback arrived
	Body   []byte
}

// fakeServe stands in for `scribehook serve` until the real assembly lands: it authenticates
// each callback by its token in the store and applies job results to the job record, as the
// persist handler does. Live callbacks are only recorded.
type fakeServe struct {
	*recorder
	st    *sqlite.Store
	store bool // apply job callbacks to the store; off, callbacks are only recorded

	mu  sync.Mutex
	got []callback
}

func newFakeServe(t *testing.T, dbPath string) *fakeServe {
	t.Helper()
	st := teststore.OpenSQLite(t, sqlite.Config{Path: dbPath, Synchronous: "normal"})
	// teststore closes st after the server, which newRecorder starts later: cleanups run last first.
	f := &fakeServe{st: st, store: true}
	f.recorder = newRecorder(t, f.answer)
	return f
}

func (f *fakeServe) answer(_ int, r *http.Request, body []byte) (int, string) {
	token, ok := strings.CutPrefix(r.URL.Path, "/v1/callbacks/")
	if !ok {
		return http.StatusNotFound, "not found"
	}
	ctx := r.Context()
	tok, err := f.st.LookupToken(ctx, store.HashToken(token))
	if err != nil {
		return http.StatusUnauthorized, "unknown token"
	}
	f.mu.Lock()
	f.got = append(f.got, callback{Method: r.Method, Token: token, JobID: tok.JobID, Body: body})
	apply := f.store
	f.mu.Unlock()
	c, err := api.ClassifyCallback(body)
	if err != nil {
		return http.StatusBadRequest, err.Error()
	}
	if !apply || (c.Kind != api.CallbackJobSuccess && c.Kind != api.CallbackJobError) {
		return http.StatusNoContent, ""
	}
	var cb api.JobCallback
	if err := json.Unmarshal(body, &cb); err != nil {
		return http.StatusBadRequest, err.Error()
	}
	rec, err := f.st.GetJob(ctx, cb.ID)
	if errors.Is(err, store.ErrNotFound) {
		rec = store.JobRecord{Job: api.Job{ID: cb.ID, Kind: api.KindPreRecorded, Version: api.RecordVersion}, Local: store.Local{Source: "callback"}}
	} else if err != nil {
		return http.StatusInternalServerError, err.Error()
	}
	now := time.Now()
	rec.Job.CompletedAt = api.PtrTime(now)
	rec.Local.ReceivedAt, rec.Local.UpdatedAt = now, now
	rec.Local.Deliveries++
	if c.Kind == api.CallbackJobSuccess {
		rec.Job.Status, rec.Job.Result = api.StatusDone, api.RawResult(cb.Payload)
	} else {
		rec.Job.Status = api.StatusError
		if cb.Error != nil {
			rec.Job.ErrorCode = api.Int(cb.Error.Code)
			rec.Local.ErrorMessage = cb.Error.Message
		}
	}
	if err := f.st.PutJob(ctx, rec); err != nil {
		return http.StatusInternalServerError, err.Error()
	}
	return http.StatusNoContent, ""
}

func (f *fakeServe) callbacks() []callback {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]callback(nil), f.got...)
}

func TestSubmitWaitsForTheCallbackInTheLocalStore(t *testing.T) {
	e := newCLIEnv(t, nil)
	out, errOut, err := e.run(nil, "submit", "--audio-url", e.files.URL+"/sample.wav", "--subtitles-format", "srt,vtt",
		"--metadata", "team=captions", "--method", "put", "--wait", "--timeout", "1m")
	if err != nil {
		t.Fatalf("submit: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	id := lines[0]
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "job "+id+" done after ") ||
		!strings.Contains(lines[1], "s of audio, 4 utterances") || !strings.HasPrefix(lines[2], "  Welcome to scribehook") {
		t.Fatalf("stdout =\n%s", out)
	}
	// stderr is not a terminal here: plain progress lines, no spinner.
	if !strings.HasPrefix(errOut, "waiting for the callback of job "+id+" (scribehook serve must be running and reachable at "+e.serve.URL+")\n") || strings.Contains(errOut, "\r") {
		t.Fatalf("stderr = %q", errOut)
	}

	cbs := e.serve.callbacks()
	if len(cbs) != 1 || cbs[0].Method != http.MethodPut || cbs[0].JobID != id {
		t.Fatalf("callbacks = %+v", cbs)
	}
	// The service was told to call back with the token (it called, bound to the job), and nothing
	// else points elsewhere; the record read back through the client shows the token redacted.
	job, err := e.client.GetPreRecorded(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	params, err := job.PreRecordedParams()
	if err != nil {
		t.Fatal(err)
	}
	if !api.IsTrue(params.Callback) || params.CallbackConfig.URL != e.serve.URL+"/v1/callbacks/[token]" || params.CallbackConfig.Method != "PUT" {
		t.Fatalf("callback params = %+v %+v", params.Callback, params.CallbackConfig)
	}
	st := e.openStore()
	tok, err := st.LookupToken(context.Background(), store.HashToken(cbs[0].Token))
	if err != nil || tok.JobID != id || tok.Kind != api.KindPreRecorded {
		t.Fatalf("token = %+v, %v", tok, err)
	}
	rec, err := st.GetJob(context.Background(), id)
	if err != nil || rec.Job.Status != api.StatusDone || rec.Local.Source != scribehook.SourceSubmit || string(rec.Job.CustomMetadata) != `{"team":"captions"}` {
		t.Fatalf("record = %+v %+v, %v", rec.Job.Status, rec.Local, err)
	}
}

func TestSubmitJSONOutputWithoutWait(t *testing.T) {
	e := newCLIEnv(t, nil)
	e.serve.store = false
	params := filepath.Join(t.TempDir(), "params.json")
	writeFile(t, params, []byte(`{"audio_url":"`+e.files.URL+`/sample.wav","callback_url":"http://elsewhere/","callback_config":{"url":"http://elsewhere/"}}`))
	out, errOut, err := e.run(nil, "submit", "--params", params, "-o", "json")
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	var got struct{ ID string }
	if json.Unmarshal([]byte(out), &got) != nil || got.ID == "" {
		t.Fatalf("stdout = %s", out)
	}
	if !strings.Contains(errOut, "callback_url of the request is dropped") || !strings.Contains(errOut, "callback_config.url of the request is replaced") {
		t.Fatalf("stderr = %s", errOut)
	}
	rec, err := e.openStore().GetJob(context.Background(), got.ID)
	if err != nil || rec.Job.Status != api.StatusQueued || rec.Job.Kind != api.KindPreRecorded || rec.Local.Source != scribehook.SourceSubmit {
		t.Fatalf("record = %+v, %v", rec, err)
	}
	var sent api.PreRecordedRequest
	if err := json.Unmarshal(rec.Job.RequestParams, &sent); err != nil || sent.CallbackURL != "" || !strings.HasPrefix(sent.CallbackConfig.URL, e.serve.URL+"/v1/callbacks/") {
		t.Fatalf("request params = %s", rec.Job.RequestParams)
	}
}

func TestSubmitWaitReportsAFailedJob(t *testing.T) {
	e := newCLIEnv(t, nil)
	out, _, err := e.run(nil, "submit", "--audio-url", e.files.URL+"/missing.wav", "--wait", "--timeout", "1m")
	id := strings.TrimSpace(out)
	if err == nil || !strings.HasPrefix(err.Error(), "job "+id+" failed: error code ") {
		t.Fatalf("err = %v, stdout %q", err, out)
	}
}

func TestSubmitWaitTimesOutWithoutServe(t *testing.T) {
	e := newCLIEnv(t, nil)
	e.serve.store = false // callbacks arrive but nothing processes them
	_, _, err := e.run(nil, "submit", "--audio-url", e.files.URL+"/sample.wav", "--wait", "--timeout", "700ms")
	if err == nil || !strings.Contains(err.Error(), "within 700ms: is `scribehook serve` running") || !strings.Contains(err.Error(), e.serve.URL) {
		t.Fatalf("err = %v", err)
	}
}

func TestSubmitNeedsTheAPIKey(t *testing.T) {
	e := newCLIEnv(t, nil)
	t.Setenv("SCRIBEHOOK_API_KEY", "")
	_, _, err := e.run(nil, "submit", "--audio-url", e.files.URL+"/sample.wav")
	if err == nil || !strings.Contains(err.Error(), "environment variable SCRIBEHOOK_API_KEY is empty") {
		t.Fatalf("err = %v", err)
	}
	_, _, err = e.run(nil, "submit", "--audio-url", e.files.URL+"/sample.wav", "--method", "PATCH")
	if err == nil || !strings.Contains(err.Error(), `--method "PATCH": use POST or PUT`) {
		t.Fatalf("err = %v", err)
	}
}

func TestSubmitRecordsNothingWhenCreationFails(t *testing.T) {
	e := newCLIEnv(t, nil)
	t.Setenv("SCRIBEHOOK_API_KEY", "wrong-key")
	_, _, err := e.run(nil, "submit", "--audio-url", e.files.URL+"/sample.wav")
	var apiErr *submitter.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("err = %v", err)
	}
	jobs, err := e.openStore().ListJobs(context.Background(), api.ListQuery{})
	if err != nil || len(jobs.Items) != 0 {
		t.Fatalf("jobs = %+v, %v", jobs, err)
	}
}

func TestConfigErrorsReachTheCommand(t *testing.T) {
	e := newCLIEnv(t, nil)
	writeFile(t, e.cfgPath, []byte("stroe: {dsn: x}\n"))
	_, _, err := e.run(nil, "jobs", "list")
	if err == nil || err.Error() != `config: line 1: unknown key "stroe" (did you mean "store"?)` {
		t.Fatalf("err = %v", err)
	}
	writeFile(t, e.cfgPath, []byte("store: {driver: postgres, dsn: \"postgres://x@127.0.0.1:1/s?connect_timeout=5\"}\n"))
	_, _, err = e.run(nil, "jobs", "list")
	if err == nil || !strings.Contains(err.Error(), "open store: postgres: connect") {
		t.Fatalf("err = %v", err)
	}
}

// useRealServe starts the real serve assembly on the environment's store and points
// public_url at it.
func (e *cliEnv) useRealServe() {
	e.t.Helper()
	st := teststore.OpenSQLite(e.t, sqlite.Config{Path: e.dbPath, Synchronous: "normal"})
	srv := serveOn(e.t, st, "", serverOptions{Service: e.client, Partitions: 2, BodyLimit: 32 << 20, Logger: logx.Discard()})
	e.t.Cleanup(func() { srv.stop(e.t) })
	e.writeConfig("http://"+srv.addr, e.sandbox.URL)
}

func TestSubmitAndLiveWithTheRealServe(t *testing.T) {
	e := newCLIEnv(t, nil)
	e.useRealServe()
	out, errOut, err := e.run(nil, "submit", "--audio-url", e.files.URL+"/sample.wav", "--subtitles", "--wait", "--timeout", "1m")
	if err != nil {
		t.Fatalf("submit: %v\n%s%s", err, out, errOut)
	}
	id, _, _ := strings.Cut(out, "\n")
	if !strings.Contains(out, "job "+id+" done after ") || !strings.Contains(out, "4 utterances") {
		t.Fatalf("stdout =\n%s", out)
	}
	show, _, err := e.run(nil, "jobs", "show", id)
	if err != nil || !strings.Contains(show, "status      done\n") || !strings.Contains(show, "utterances  4\n") {
		t.Fatalf("show: %v\n%s", err, show)
	}
	// With -o json, the job record as jobs show -o json prints it, local view included.
	out, errOut, err = e.run(nil, "submit", "--audio-url", e.files.URL+"/sample.wav", "--wait", "--timeout", "1m", "-o", "json")
	var rec struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Local  struct {
			Source       string            `json:"source"`
			Artifacts    []json.RawMessage `json:"artifacts"`
			LiveMessages *int64            `json:"live_messages"`
		} `json:"local"`
	}
	if err != nil || json.Unmarshal([]byte(out), &rec) != nil || rec.ID == "" || rec.ID == id || rec.Status != "done" ||
		rec.Local.Source != "submit" || rec.Local.Artifacts == nil || rec.Local.LiveMessages != nil {
		t.Fatalf("submit --wait -o json: %v %+v\n%s%s", err, rec, out, errOut)
	}

	path, _ := sampleWAV(t)
	out, errOut, err = e.run(nil, "live", "--audio", path, "--lifecycle-events")
	if err != nil {
		t.Fatalf("live: %v\n%s%s", err, out, errOut)
	}
	live, _, _ := liveOutput(t, out)
	st := e.openStore()
	var n int
	testwait.For(t, "session "+live+"'s end_session stored", 20*time.Second, func() bool {
		msgs, err := st.LiveMessages(context.Background(), live, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		n = len(msgs)
		return n > 0 && msgs[n-1].Type == api.MessageEndSession
	})
	show, _, err = e.run(nil, "jobs", "show", live)
	if err != nil || !strings.Contains(show, fmt.Sprintf("live messages  %d\n", n)) {
		t.Fatalf("show: %v\n%s", err, show)
	}
}
