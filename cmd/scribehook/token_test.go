package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/submitter"
)

// sandboxCallbackToken reads the callback token of a job from the sandbox's own record, raw
// (api.Job redacts what it decodes): the service holds the URL in clear, and only it may.
func sandboxCallbackToken(t *testing.T, base, kind, id string) string {
	t.Helper()
	var rec struct {
		RequestParams struct {
			CallbackConfig struct {
				URL string `json:"url"`
			} `json:"callback_config"`
		} `json:"request_params"`
	}
	getJSON(t, base+"/v2/"+kind+"/"+id, http.Header{"X-Service-Key": {e2eKey}}, &rec)
	u := rec.RequestParams.CallbackConfig.URL
	i := strings.LastIndex(u, "/v1/callbacks/")
	if i < 0 || len(u) < i+len("/v1/callbacks/")+40 {
		t.Fatalf("sandbox record of %s has callback URL %q", id, u)
	}
	return u[i+len("/v1/callbacks/"):]
}

// The per-job token is a capability: after a pre-recorded job and a live session created the
// way submit and live create them, with a file sink and a webhook sink that fails into the
// dead letters, the token is nowhere: not in the database's files, the sinks' files, the
// webhook's bodies, the read API's answers or the logs.
func TestE2ECallbackTokenNeverWrittenOrSent(t *testing.T) {
	var logs sandboxtest.Buffer
	logger := logrus.New()
	logger.SetOutput(&logs)
	logger.SetLevel(logrus.DebugLevel)
	logger.SetFormatter(&logrus.JSONFormatter{})

	hook := newRecorder(t, func(int, *http.Request, []byte) (int, string) {
		return http.StatusInternalServerError, "" // every event ends as a dead letter
	})

	out := filepath.Join(t.TempDir(), "out")
	l := newLoopWith(t, sandbox.Faults{}, func(o *serverOptions) {
		o.Logger = logrus.NewEntry(logger)
		spec := sinks.Spec{
			Name: "hook", Kind: "webhook", URL: hook.URL, SigningSecrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
			Allow: []string{"127.0.0.0/8"}, Filter: sinks.Filter{Events: []string{"job.*", "live.end_session"}},
			Retry: []time.Duration{0}, BreakerThreshold: -1,
		}
		o.Sinks = []sinkSetup{fileSink(t, out), newSink(t, spec, o.Logger)}
	})
	ctx := context.Background()
	cfg := configs.Default()
	cfg.PublicURL = "http://" + l.addr

	// A pre-recorded job as `scribehook submit` creates it.
	req := api.PreRecordedRequest{AudioURL: l.files.URL + "/sample.wav", CustomMetadata: json.RawMessage(`{"team":"sec"}`)}
	jobID, err := submitJob(ctx, cfg, l.store, l.service, &req, http.MethodPost, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	// A live session as `scribehook live` creates it.
	subm := &scribehook.Submitter{Store: l.store, Service: l.service, PublicURL: cfg.PublicURL}
	created, err := subm.StartLive(ctx, api.LiveRequest{SampleRate: api.Int(8000),
		CallbackConfig: &api.LiveCallbackConfig{MessagesConfig: api.EveryMessage(true)}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := subm.Stream(ctx, created, bytes.NewReader(l.wav), submitter.StreamOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	rec := l.waitJob(jobID)
	l.waitJob(created.ID)
	tokens := map[string]string{
		"pre-recorded": sandboxCallbackToken(t, l.sandbox.URL, "pre-recorded", jobID),
		"live":         sandboxCallbackToken(t, l.sandbox.URL, "live", created.ID),
	}
	if tok, err := l.store.LookupToken(ctx, store.HashToken(tokens["live"])); err != nil || tok.JobID != created.ID || tok.Kind != api.KindLive {
		t.Fatalf("the sandbox's live token is not the session's: %+v, %v", tok, err)
	}
	// The record says where callbacks went, without the token.
	if p, err := rec.Job.PreRecordedParams(); err != nil || p.CallbackConfig == nil ||
		p.CallbackConfig.URL != "http://"+l.addr+"/v1/callbacks/[token]" {
		t.Errorf("stored callback_config = %+v, %v", p.CallbackConfig, err)
	}
	testwait.For(t, "dead letters of every hook event", 60*time.Second, func() bool {
		dl, _ := l.store.DeadLetters(ctx, "hook", time.Time{}, 0)
		return len(dl) >= 3 // job.succeeded twice (job and session), live.end_session
	})

	places := map[string][]byte{}
	read := func(path string) {
		code, b := l.get(path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, b)
		}
		places["read API "+path] = b
	}
	for _, p := range []string{"/v1/jobs", "/v1/jobs/" + jobID, "/v1/jobs/" + created.ID, "/v1/deadletters",
		"/v1/live/" + created.ID + "/messages"} {
		read(p)
	}
	if !bytes.Contains(places["read API /v1/jobs/"+jobID], []byte(`/v1/callbacks/[token]`)) {
		t.Errorf("GET /v1/jobs/%s does not show the redacted callback URL: %s", jobID, truncate(places["read API /v1/jobs/"+jobID]))
	}
	bodies := hook.count()
	for i := range bodies {
		places[fmt.Sprintf("webhook body %d", i)] = []byte(hook.body(i))
	}
	if bodies < 3 {
		t.Errorf("the webhook got %d bodies, want at least 3", bodies)
	}
	l.stop() // the database's files are complete once it is closed
	readTree := func(kind, dir string) {
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(path)
				places[kind+" "+path] = b
			}
			return nil
		})
	}
	readTree("file", filepath.Dir(l.dbPath))
	readTree("sink file", out)
	places["logs"] = logs.Bytes()
	if len(places["logs"]) == 0 {
		t.Fatal("no log lines captured")
	}
	sinkFiles := 0
	for where, b := range places {
		if strings.HasPrefix(where, "sink file ") {
			sinkFiles++
		}
		for kind, tok := range tokens {
			if bytes.Contains(b, []byte(tok)) {
				t.Errorf("the %s token is in %s", kind, where)
			}
		}
	}
	if sinkFiles == 0 {
		t.Error("the file sink wrote nothing")
	}
}
