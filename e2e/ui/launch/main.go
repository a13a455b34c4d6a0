// Command launch starts what the dashboard's browser tests run against, all on loopback: the
// sandbox (internal/sandboxtest's, scripted engine), a receiver with its pipeline and sinks
// over a fresh SQLite store (what `scribehook serve` runs), a file server with the sample
// recording (and the same as a dialogue of two speakers, dialogue_url), a webhook destination that fails until told otherwise, and a small control API
// for the test. It seeds one finished job and one whose audio source is a javascript: URL,
// prints one line of JSON with the URLs, the read token and its data directory, and runs until
// its standard input closes or it gets SIGINT/SIGTERM.
//
//	go run ./e2e/ui/launch [-sample cmd/scribehook/demodata/sample.wav] [-listen 127.0.0.1:0]
//
// Control API (JSON): POST /submit {"audio_url", "fail_apply"} creates a pre-recorded job the
// way `scribehook submit` does (fail_apply: the store refuses to apply its callback, which
// fails for good after its one retry, 200 ms later); POST /apply {} lets every job's callbacks
// be applied again (the cause fixed); POST /live streams the sample to a new live session in
// real time and answers at once with its id; POST /hook {"healthy": bool, "gone": bool}
// switches the webhook destination (gone: it answers 410 Gone, which disables the sink); GET
// /hook counts what it received.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/e2elaunch"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
	"github.com/scribehook/scribehook/submitter"
	"github.com/scribehook/scribehook/subtitles"
)

const (
	apiKey    = "ui-e2e-service-key"
	readToken = "ui-e2e-read-token-0123456789"
)

func main() {
	sample := flag.String("sample", "cmd/scribehook/demodata/sample.wav", "recording (and its .json sidecar) to serve")
	listen := flag.String("listen", "127.0.0.1:0", "address of the receiver (the dashboard)")
	flag.Parse()
	if err := run(*sample, *listen); err != nil {
		fmt.Fprintln(os.Stderr, "launch:", err)
		os.Exit(1)
	}
}

type env struct {
	*e2elaunch.Env
	service   *submitter.Client
	submitter *scribehook.Submitter
	serve     string // base URL of the receiver
	files     string
	wav       []byte
	healthy   atomic.Bool
	gone      atomic.Bool
	hooks     atomic.Int64 // deliveries accepted by the webhook destination
	refused   atomic.Int64
	store     *refusingStore
	wg        sync.WaitGroup
}

// refusingStore is the kit's store refusing to apply the inbox rows of the jobs in jobs, as a
// store whose disk fails would: the failed deliveries' page then has one to show and replay.
// It is the SQLite store itself otherwise, with the roles outside store.Store (the dashboard's
// sign-outs, every queue's depth), which the kit finds by their methods.
type refusingStore struct {
	*sqlite.Store
	mu   sync.Mutex
	jobs map[string]bool
}

var errRefused = errors.New("disk I/O error (refused by the test)")

func (s *refusingStore) refuse(job string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.jobs[job] = true
	} else {
		clear(s.jobs)
	}
}

// refuses reports whether one of the rows of ids is of a refused job.
func (s *refusingStore) refuses(ctx context.Context, ids ...int64) bool {
	s.mu.Lock()
	none := len(s.jobs) == 0
	s.mu.Unlock()
	if none {
		return false
	}
	rows, err := s.Store.InboxRows(ctx, ids)
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rows {
		if s.jobs[r.JobID] {
			return true
		}
	}
	return false
}

func (s *refusingStore) Apply(ctx context.Context, id int64, fn func(context.Context, store.Tx) error) error {
	if s.refuses(ctx, id) {
		return errRefused
	}
	return s.Store.Apply(ctx, id, fn)
}

func (s *refusingStore) ApplyGroup(ctx context.Context, ids []int64, fn func(context.Context, store.Tx, []int64) error) error {
	if s.refuses(ctx, ids...) {
		return errRefused
	}
	return s.Store.ApplyGroup(ctx, ids, fn)
}

func run(sample, listen string) error {
	ctx, launch, err := e2elaunch.Start("scribehook-ui-", sample)
	if err != nil {
		return err
	}
	defer launch.Close()
	rec := launch.Recording
	e := &env{Env: launch, wav: rec.WAV, store: &refusingStore{Store: launch.Store, jobs: map[string]bool{}}}

	// The service: jobs wait a little in queued and processing, so the dashboard sees them move.
	sb, err := sandboxtest.StartService(sandbox.Config{
		APIKey: apiKey, Logger: e.Log, ProcessingDelay: 2500 * time.Millisecond, Callbacks: e2elaunch.CallbackRetries,
	})
	if err != nil {
		return err
	}
	defer sb.Close()
	if e.service, err = sb.Client(); err != nil {
		return err
	}

	files := rec.Handler()
	// The same recording as a dialogue: its sidecar gives every other utterance to speaker 1,
	// so that a job of it has two speakers to name.
	dialogue, err := asDialogue(rec)
	if err != nil {
		return err
	}
	files.Handle("GET /"+dialogue.Name, dialogue.Handler())
	files.Handle("GET /"+dialogue.Name+".json", dialogue.Handler())
	// The webhook sink's destination, beside the recording: 503 until the test says it is healthy.
	files.HandleFunc("POST /hook", func(w http.ResponseWriter, _ *http.Request) {
		if e.gone.Load() {
			e.refused.Add(1)
			http.Error(w, "this endpoint was removed", http.StatusGone)
			return
		}
		if !e.healthy.Load() {
			e.refused.Add(1)
			http.Error(w, "destination down (the test has not switched it on)", http.StatusServiceUnavailable)
			return
		}
		e.hooks.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})
	filesSrv := sandboxtest.ServeFiles(rec, files)
	defer filesSrv.Close()
	e.files = filesSrv.URL

	// serve: the kit, as `scribehook serve` runs it.
	stopServe, err := e.startServe(ctx, listen)
	if err != nil {
		return err
	}
	defer stopServe()

	seeded, err := e.submit(ctx, filesSrv.AudioURL, json.RawMessage(`{"team":"captions","seeded":true}`))
	if err != nil {
		return fmt.Errorf("seed a job: %w", err)
	}
	if err := e.waitDone(ctx, seeded); err != nil {
		return err
	}
	if err := e.seedHostile(ctx); err != nil {
		return fmt.Errorf("seed the hostile job: %w", err)
	}

	control := http.NewServeMux()
	control.HandleFunc("POST /submit", e.handleSubmit)
	control.HandleFunc("POST /live", e.handleLive)
	control.HandleFunc("POST /apply", func(w http.ResponseWriter, _ *http.Request) {
		e.store.refuse("", false)
		e2elaunch.WriteJSON(w, map[string]bool{"refusing": false})
	})
	control.HandleFunc("POST /hook", func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Healthy, Gone bool }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		e.healthy.Store(body.Healthy)
		e.gone.Store(body.Gone)
		e2elaunch.WriteJSON(w, map[string]any{"healthy": body.Healthy, "gone": body.Gone})
	})
	control.HandleFunc("GET /hook", func(w http.ResponseWriter, _ *http.Request) {
		e2elaunch.WriteJSON(w, map[string]any{"healthy": e.healthy.Load(), "received": e.hooks.Load(), "refused": e.refused.Load()})
	})
	controlSrv := sandboxtest.Serve(control)
	defer controlSrv.Close()
	if err := e2elaunch.PrintLine(map[string]string{
		"ui": e.serve + "/ui/", "serve": e.serve, "sandbox": sb.URL, "api_key": apiKey, "key_header": "x-service-key",
		"token": readToken, "control": controlSrv.URL, "files": e.files, "seeded_job": seeded,
		"hostile_job": hostileJob, "data_dir": e.Dir, "audio_url": filesSrv.AudioURL,
		"dialogue_url": e.files + "/" + dialogue.Name,
	}); err != nil {
		return err
	}
	<-ctx.Done()
	e.wg.Wait()
	return nil
}

// startServe runs serve (scribehook.Kit) with subtitles in srt and vtt and two sinks: files
// under the data directory, and a webhook to the failing destination with a short retry
// schedule, so that dead letters appear within a second, and its breaker opens after 3
// failures for 3 s. Its store is the refusing one, and a delivery gets one retry, 200 ms after
// its first attempt, so that a failed delivery appears within a second.
func (e *env) startServe(ctx context.Context, listen string) (func(), error) {
	cfg := configs.Default()
	cfg.Subtitles = configs.SubtitlesConfig{Profile: subtitles.NetflixAdult, Formats: []string{"srt", "vtt"}, Dir: filepath.Join(e.Dir, "subtitles")}
	cfg.Sinks = []configs.Sink{{Name: "files", Kind: sinks.KindFile, Dir: filepath.Join(e.Dir, "out"), Events: []string{"*"}, Timeout: configs.DefaultSinkTimeout}}
	hook := sinks.Spec{Name: "captions-hook", Kind: sinks.KindWebhook, URL: e.files + "/hook", Allow: []string{"127.0.0.0/8"},
		Filter: sinks.Filter{Events: []string{"job.succeeded"}}, Retry: []time.Duration{0, 200 * time.Millisecond}, Timeout: 2 * time.Second,
		BreakerThreshold: 3, BreakerCooldown: 3 * time.Second}
	hookSink, err := sinks.New(hook, sinks.Deps{Logger: e.Log})
	if err != nil {
		return nil, err
	}
	serveURL, stop, err := e.ServeKit(ctx, listen, cfg, scribehook.WithService(e.service), scribehook.WithStore(e.store),
		scribehook.WithInboxRetry(200*time.Millisecond),
		scribehook.WithSecrets(configs.Secrets{APIKey: apiKey, ReadToken: readToken}), scribehook.WithSink(hook, hookSink))
	if err != nil {
		return nil, err
	}
	e.serve = serveURL
	e.submitter = &scribehook.Submitter{Store: e.Store, Service: e.service, PublicURL: e.serve}
	return stop, nil
}

// asDialogue is rec named dialogue.wav, its sidecar's utterances alternating between speakers
// 0 and 1.
func asDialogue(rec sandboxtest.Recording) (sandboxtest.Recording, error) {
	var sidecar map[string]any
	if err := json.Unmarshal(rec.Sidecar, &sidecar); err != nil {
		return rec, fmt.Errorf("the recording's sidecar: %w", err)
	}
	utts, _ := sidecar["utterances"].([]any)
	for i, u := range utts {
		if m, ok := u.(map[string]any); ok {
			m["speaker"] = i % 2
		}
	}
	b, err := json.Marshal(sidecar)
	if err != nil {
		return rec, err
	}
	return sandboxtest.Recording{Name: "dialogue.wav", WAV: rec.WAV, Sidecar: b}, nil
}

// hostileJob is a finished job whose record names a javascript: URL as its audio source, as a
// broken or hostile submitter could have it stored: the dashboard must show it as text.
const hostileJob = "hostile-source-job"

func (e *env) seedHostile(ctx context.Context) error {
	created := time.Now().Add(-time.Hour)
	completed := api.NewTime(created.Add(time.Minute))
	rec := store.JobRecord{
		Job: api.Job{
			ID: hostileJob, Version: api.RecordVersion, Status: api.StatusDone, Kind: api.KindPreRecorded,
			CreatedAt: api.NewTime(created), CompletedAt: &completed,
			File:   &api.File{ID: "f-hostile", Filename: "hostile.wav", Source: "javascript:alert(1)", AudioDuration: 1, NumberOfChannels: 1},
			Result: json.RawMessage(`{"transcription":{"languages":["en"],"utterances":[` + hostileUtterance + `]}}`),
		},
		Local: store.Local{Source: "submit", UpdatedAt: created, Final: api.EventTranscriptionSuccess},
	}
	// Stored and indexed as the pipeline applies a result, through an inbox row of its own whose
	// body is that result's callback: should the pipeline's sweep apply the row first, it stores
	// and indexes the same.
	if err := e.Store.PutJob(ctx, store.JobRecord{Job: api.Job{ID: hostileJob, Version: api.RecordVersion,
		Status: api.StatusProcessing, Kind: api.KindPreRecorded, CreatedAt: rec.Job.CreatedAt, File: rec.Job.File},
		Local: store.Local{Source: "submit", UpdatedAt: created}}); err != nil {
		return err
	}
	body := `{"id":"` + hostileJob + `","event":"transcription.success","payload":` + string(rec.Job.Result) + `}`
	res, err := e.Store.Ingest(ctx, []store.Delivery{{DedupeKey: "e2e-seed:" + hostileJob, Route: "job",
		Kind: api.CallbackJobSuccess, Event: api.EventTranscriptionSuccess, JobID: hostileJob, PartitionKey: hostileJob,
		Body: []byte(body), ReceivedAt: created}})
	if err != nil {
		return err
	}
	err = e.Store.Apply(ctx, res[0].ID, func(ctx context.Context, tx store.Tx) error {
		if err := tx.PutJob(ctx, rec); err != nil {
			return err
		}
		return tx.IndexUtterances(ctx, store.ResultUtterances(hostileJob, rec.Job.Result))
	})
	if errors.Is(err, store.ErrAlreadyApplied) {
		return nil
	}
	return err
}

// hostileUtterance says markup and a script as words: the search page must show it as text.
const hostileUtterance = `{"start":0.25,"end":1,"speaker":0,"text":"hostile <img src=x onerror=\"window.__xss=1\"> <b>bold</b> & more","words":[]}`

// submit creates a pre-recorded job whose callback comes back to serve, as `scribehook submit`
// does.
func (e *env) submit(ctx context.Context, audioURL string, metadata json.RawMessage) (string, error) {
	created, err := e.submitter.Submit(ctx, api.PreRecordedRequest{
		AudioURL:  audioURL,
		Subtitles: api.Bool(true), SubtitlesConfig: &api.SubtitlesConfig{Formats: []string{"srt", "vtt"}},
		Diarization: api.Bool(true), Sentences: api.Bool(true), Summarization: api.Bool(true),
		SentimentAnalysis: api.Bool(true), // the sandbox has no model for it: a failed add-on
		CustomMetadata:    metadata,
	})
	return created.ID, err
}

func (e *env) waitDone(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		rec, err := e.Store.GetJob(ctx, id)
		if err == nil && rec.Job.Status.Final() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("job %s did not finish: %w", id, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (e *env) handleSubmit(w http.ResponseWriter, r *http.Request) {
	var body struct {
		AudioURL       string          `json:"audio_url"`
		CustomMetadata json.RawMessage `json:"custom_metadata"`
		FailApply      bool            `json:"fail_apply"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.AudioURL == "" {
		http.Error(w, "body must be {\"audio_url\": ...}", http.StatusBadRequest)
		return
	}
	id, err := e.submit(r.Context(), body.AudioURL, body.CustomMetadata)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if body.FailApply {
		// The service calls back after its processing delay (2.5 s): well after this.
		e.store.refuse(id, true)
	}
	e2elaunch.WriteJSON(w, map[string]string{"id": id})
}

// handleLive creates a live session with every category on and streams the sample to it in
// real time, in the background.
func (e *env) handleLive(w http.ResponseWriter, r *http.Request) {
	all := api.EveryMessage(true)
	created, err := e.submitter.StartLive(r.Context(), api.LiveRequest{
		SampleRate: api.Int(16000), Endpointing: api.Float(0.3),
		CallbackConfig: &api.LiveCallbackConfig{MessagesConfig: all},
		PostProcessing: &api.PostProcessing{Summarization: api.Bool(true)},
	}, "")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		err := e.submitter.Stream(ctx, created, bytes.NewReader(e.wav), submitter.StreamOptions{Realtime: true}, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "launch: live session:", err)
		}
	}()
	e2elaunch.WriteJSON(w, map[string]string{"id": created.ID})
}
