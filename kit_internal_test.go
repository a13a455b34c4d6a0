package scribehook

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/submitter"
)

const testKey = "kit-test-key"

// world is a sandbox of the service and a file server with the demo's recording, on loopback.
type world struct {
	service *submitter.Client
	sandbox string
	audio   string // URL of the WAV; its sidecar is audio + ".json"
	wav     []byte
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := sandboxtest.NewWorld(t, sandbox.Config{APIKey: testKey, Callbacks: sandboxtest.QuickRetries}, sandboxtest.DemoSample(t))
	client, err := w.Service.Client()
	if err != nil {
		t.Fatal(err)
	}
	return &world{service: client, sandbox: w.Service.URL, audio: w.Files.AudioURL, wav: w.Files.WAV}
}

// kitConfig is the default configuration on a database in dir, listening on ln.
func kitConfig(dir string, ln net.Listener, serviceURL string) configs.Config {
	cfg := configs.Default()
	cfg.Listen = ln.Addr().String()
	cfg.PublicURL = "http://" + ln.Addr().String()
	cfg.Service.BaseURL = serviceURL
	cfg.Store.DSN = filepath.Join(dir, "scribehook.db")
	cfg.Subtitles.Dir = filepath.Join(dir, "artifacts")
	cfg.Subtitles.Formats = []string{"srt", "vtt"}
	return cfg
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// startKit builds, starts and serves a kit; it is shut down at the end of the test.
func startKit(t *testing.T, cfg configs.Config, ln net.Listener, opts ...Option) *Kit {
	t.Helper()
	opts = append([]Option{WithLogger(logx.Discard()), WithSecrets(configs.Secrets{APIKey: testKey})}, opts...)
	k, err := New(context.Background(), cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	go func() { _ = k.Serve(ln) }()
	t.Cleanup(func() {
		if err := k.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return k
}

// recorder is an event handler that keeps what it was given.
type recorder struct {
	mu     sync.Mutex
	events []api.Event
}

func (r *recorder) handle(_ context.Context, ev api.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	return nil
}

func (r *recorder) of(jobID string) []api.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []api.Event
	for _, ev := range r.events {
		if ev.JobID == jobID {
			out = append(out, ev)
		}
	}
	return out
}

// Go event handlers get every event of a sandbox job and of a live session, each once, the
// session's in the order its messages were stored (Ordered), with typed helpers decoding them.
func TestEventHandlersGetEveryEventOnceInOrder(t *testing.T) {
	w := newWorld(t)
	ln := listen(t)
	cfg := kitConfig(t.TempDir(), ln, w.sandbox)
	all := &recorder{}
	var mu sync.Mutex
	var succeeded []string // first utterance of each job.succeeded, through JobSucceeded
	var finals []string    // final transcripts, through LiveMessage
	k := startKit(t, cfg, ln,
		WithService(w.service),
		WithEventHandler(EventHandler{Name: "all", Ordered: true, Func: all.handle}),
		WithEventHandler(EventHandler{Name: "succeeded", Filter: sinks.Filter{Events: []string{api.EventJobSucceeded}, Kinds: []api.JobKind{api.KindPreRecorded}},
			Func: JobSucceeded(func(_ context.Context, _ api.Event, job api.Job) error {
				mu.Lock()
				defer mu.Unlock()
				succeeded = append(succeeded, apitest.MustResult(&job).Transcription.Utterances[0].Text)
				return nil
			})}),
		WithEventHandler(EventHandler{Name: "finals", Filter: FinalTranscripts(), Ordered: true,
			Func: LiveMessage(func(_ context.Context, _ api.Event, msg api.LiveMessage) error {
				var d api.TranscriptData
				if err := msg.DecodeData(&d); err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				finals = append(finals, d.Utterance.Text)
				return nil
			})}),
	)
	ctx := context.Background()
	subm, err := k.Submitter()
	if err != nil {
		t.Fatal(err)
	}
	created, err := subm.Submit(ctx, api.PreRecordedRequest{AudioURL: w.audio})
	jobID := created.ID
	if err != nil {
		t.Fatal(err)
	}
	session, err := subm.StartLive(ctx, api.LiveRequest{SampleRate: api.Int(16000), Endpointing: api.Float(0.3),
		CallbackConfig: &api.LiveCallbackConfig{MessagesConfig: api.EveryMessage(true)}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := subm.Stream(ctx, session, bytes.NewReader(w.wav), submitter.StreamOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if rec, err := WaitJob(waitCtx, k.Records(), jobID, 0, nil); err != nil || rec.Job.Status != api.StatusDone {
		t.Fatalf("job: %v %s", err, rec.Job.Status)
	}
	if _, err := WaitJob(waitCtx, k.Records(), session.ID, 0, nil); err != nil {
		t.Fatal(err)
	}
	msgs, err := k.Records().LiveMessages(ctx, session.ID, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	// The session's events: one per stored message, then, with its end, job.succeeded and
	// subtitles.ready; the job's: job.succeeded and subtitles.ready.
	testwait.For(t, fmt.Sprintf("every event at the handler (%d messages stored)", len(msgs)), 30*time.Second, func() bool {
		return len(all.of(session.ID)) == len(msgs)+2 && len(all.of(jobID)) == 2
	})
	time.Sleep(200 * time.Millisecond) // a duplicate would be out by now
	got := all.of(session.ID)
	if len(got) != len(msgs)+2 {
		t.Fatalf("%d session events, want %d", len(got), len(msgs)+2)
	}
	seen := map[string]bool{}
	for i, m := range msgs {
		ev := got[i]
		if seen[ev.ID] {
			t.Fatalf("event %s twice", ev.ID)
		}
		seen[ev.ID] = true
		if ev.Type != api.LiveEvent(m.Type) || string(ev.Data) != string(m.Payload) || ev.Category != m.Category {
			t.Fatalf("event %d is %s %s, stored message %d is %s %s", i, ev.Type, ev.Data, m.Seq, m.Type, m.Payload)
		}
	}
	if end := got[len(msgs):]; end[0].Type != api.EventJobSucceeded || end[0].Kind != api.KindLive || end[1].Type != api.EventSubtitlesReady {
		t.Errorf("the session's last events are %s (%s), %s", end[0].Type, end[0].Kind, end[1].Type)
	}
	var jobTypes []string
	for _, ev := range all.of(jobID) {
		jobTypes = append(jobTypes, ev.Type)
	}
	slices.Sort(jobTypes)
	if strings.Join(jobTypes, ",") != "job.succeeded,subtitles.ready" {
		t.Errorf("job events %v", jobTypes)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(succeeded) != 1 || succeeded[0] != "Welcome to scribehook" {
		t.Errorf("JobSucceeded saw %q", succeeded)
	}
	var wantFinals []string
	for _, m := range msgs {
		var lm api.LiveMessage
		if err := lm.UnmarshalJSON(m.Payload); err == nil && m.Type == api.MessageTranscript && lm.TranscriptIsFinal() {
			var d api.TranscriptData
			_ = lm.DecodeData(&d)
			wantFinals = append(wantFinals, d.Utterance.Text)
		}
	}
	if len(wantFinals) == 0 || strings.Join(finals, "|") != strings.Join(wantFinals, "|") {
		t.Errorf("final transcripts %q, stored %q", finals, wantFinals)
	}
}

// A failing handler is retried on its schedule, then its event is dead-lettered; replayed, it
// is delivered with the same event id.
func TestEventHandlerRetriesDeadLettersAndReplays(t *testing.T) {
	w := newWorld(t)
	ln := listen(t)
	cfg := kitConfig(t.TempDir(), ln, w.sandbox)
	f := newFlaky()
	k := startKit(t, cfg, ln, WithService(w.service), WithEventHandler(f.handler(0, 20*time.Millisecond, 20*time.Millisecond)))
	ctx := context.Background()
	subm, _ := k.Submitter()
	created, err := subm.Submit(ctx, api.PreRecordedRequest{AudioURL: w.audio})
	jobID := created.ID
	if err != nil {
		t.Fatal(err)
	}
	var dead []store.SinkDelivery
	testwait.For(t, "the dead letter", 30*time.Second, func() bool {
		dead, _ = k.Records().DeadLetters(ctx, "flaky", time.Time{}, 0)
		return len(dead) == 1
	})
	if dead[0].Attempts != 3 || dead[0].LastError != "database down" || dead[0].Event.JobID != jobID {
		t.Fatalf("dead letter %+v", dead[0])
	}
	f.mu.Lock()
	if len(f.calls) != 3 {
		t.Errorf("%d f.calls before the dead letter, want 3", len(f.calls))
	}
	f.failing = false
	f.mu.Unlock()
	if err := k.Records().ReplayDeadLetter(ctx, dead[0].ID); err != nil { // wakes the sinks
		t.Fatal(err)
	}
	testwait.For(t, "the replayed delivery", 30*time.Second, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.calls) == 4
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls[3] != dead[0].EventID {
		t.Errorf("replayed event %s, the dead letter's %s", f.calls[3], dead[0].EventID)
	}
	if d, _ := k.Records().DeadLetters(ctx, "flaky", time.Time{}, 0); len(d) != 0 {
		t.Errorf("dead letters after the replay: %d", len(d))
	}
}

// envChild makes the test binary a kit process for TestEventHandlerCalledAfterKill.
const envChild = "SCRIBEHOOK_KIT_CHILD"

// TestMain lets the test binary run as the child of TestEventHandlerCalledAfterKill.
func TestMain(m *testing.M) {
	if spec := os.Getenv(envChild); spec != "" {
		os.Exit(runChild(spec))
	}
	if spec := os.Getenv(envReconcileChild); spec != "" {
		os.Exit(runReconcileChild(spec))
	}
	os.Exit(m.Run())
}

// runChild serves a kit on the database and port of spec ("dsn listen service") whose event
// handler says "called <event id>" on stdout and then never returns: it is killed there.
func runChild(spec string) int {
	parts := strings.Fields(spec)
	ln, err := net.Listen("tcp", parts[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := configs.Default()
	cfg.Listen, cfg.PublicURL, cfg.Service.BaseURL = parts[1], "http://"+parts[1], parts[2]
	cfg.Store.DSN = parts[0]
	k, err := New(context.Background(), cfg, WithLogger(logx.Discard()), WithSecrets(configs.Secrets{APIKey: testKey}),
		WithEventHandler(EventHandler{Name: "billing", Filter: sinks.Filter{Events: []string{api.EventJobSucceeded}},
			Func: func(ctx context.Context, ev api.Event) error {
				fmt.Printf("called %s\n", ev.ID)
				select {} // killed while handling
			}}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := k.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	_ = k.Serve(ln)
	return 0
}

// A process killed with kill -9 while its handler runs (the delivery committed, the event
// queued, the handler called but not done): the next process on the same store calls the
// handler again with the same event.
func TestEventHandlerCalledAfterKill(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	ln := listen(t)
	addr := ln.Addr().String()
	_ = ln.Close() // the child listens there
	dsn := filepath.Join(dir, "scribehook.db")
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), envChild+"="+dsn+" "+addr+" "+w.sandbox)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("child said %q", lines.Text())
	}
	// The job is submitted as `scribehook submit` would, beside the running child.
	cfg := configs.Default()
	cfg.Store.DSN = dsn
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	subm := &Submitter{Store: st, Service: w.service, PublicURL: "http://" + addr}
	created, err := subm.Submit(context.Background(), api.PreRecordedRequest{AudioURL: w.audio})
	jobID := created.ID
	_ = st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "called ") {
		t.Fatalf("child said %q", lines.Text())
	}
	eventID := strings.TrimPrefix(lines.Text(), "called ")
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()

	// The next process: the handler is called with the same event, for the same job.
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg2 := kitConfig(dir, ln2, w.sandbox)
	rec := &recorder{}
	startKit(t, cfg2, ln2, WithService(w.service), WithEventHandler(EventHandler{Name: "billing",
		Filter: sinks.Filter{Events: []string{api.EventJobSucceeded}}, Func: rec.handle}))
	testwait.For(t, "the handler after the restart", 30*time.Second, func() bool { return len(rec.of(jobID)) > 0 })
	if got := rec.of(jobID); len(got) != 1 || got[0].ID != eventID || got[0].Type != api.EventJobSucceeded {
		t.Fatalf("after the restart the handler got %+v, want event %s once", got, eventID)
	}
}

// flaky is the state of an event handler of job.succeeded that fails while failing is set,
// and records the event id of every call.
type flaky struct {
	mu      sync.Mutex
	failing bool
	calls   []string
}

func newFlaky() *flaky { return &flaky{failing: true} }

// handler is the event handler "flaky" over f, retried on retry.
func (f *flaky) handler(retry ...time.Duration) EventHandler {
	return EventHandler{
		Name: "flaky", Filter: sinks.Filter{Events: []string{api.EventJobSucceeded}},
		Retry: retry,
		Func: func(_ context.Context, ev api.Event) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.calls = append(f.calls, ev.ID)
			if f.failing {
				return errors.New("database down")
			}
			return nil
		},
	}
}
