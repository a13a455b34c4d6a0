package scribehook

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/reconcile"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/submitter"
)

// dropWorld is a sandbox that never sends a fraction drop of its callbacks (and their retries).
func dropWorld(t *testing.T, drop float64, seed uint64) *world {
	t.Helper()
	w := sandboxtest.NewWorld(t, sandbox.Config{APIKey: testKey, Callbacks: sandboxtest.QuickRetries,
		Faults: sandbox.Faults{DropCallbacks: drop, Seed: seed}}, sandboxtest.DemoSample(t))
	client, err := w.Service.Client()
	if err != nil {
		t.Fatal(err)
	}
	return &world{service: client, sandbox: w.Service.URL, audio: w.Files.AudioURL, wav: w.Files.WAV}
}

// quickReconcile asks the service a second after a job's creation, every second.
func quickReconcile(cfg *configs.Config) {
	cfg.Reconcile.After, cfg.Reconcile.Every, cfg.Reconcile.MaxWait = time.Second, time.Second, 2*time.Second
}

// submitAll submits jobs pre-recorded jobs and sessions live sessions (streamed at once, every
// category called back), and returns their ids.
func submitAll(t *testing.T, subm *Submitter, w *world, jobs, sessions int) (jobIDs, sessionIDs []string) {
	t.Helper()
	ctx := context.Background()
	for range jobs {
		created, err := subm.Submit(ctx, api.PreRecordedRequest{AudioURL: w.audio})
		if err != nil {
			t.Fatal(err)
		}
		jobIDs = append(jobIDs, created.ID)
	}
	for range sessions {
		session, err := subm.StartLive(ctx, api.LiveRequest{SampleRate: api.Int(16000), Endpointing: api.Float(0.3),
			CallbackConfig: &api.LiveCallbackConfig{MessagesConfig: api.EveryMessage(true)}}, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := subm.Stream(ctx, session, bytes.NewReader(w.wav), submitter.StreamOptions{}, nil); err != nil {
			t.Fatal(err)
		}
		sessionIDs = append(sessionIDs, session.ID)
	}
	return jobIDs, sessionIDs
}

// checkComplete asserts that every job is done locally with the service's own result, applied
// once, and that every session holds each message of its record exactly once; it returns how
// many jobs and sessions needed reconciliation.
func checkComplete(t *testing.T, st store.Store, service *submitter.Client, jobIDs, sessionIDs []string) (reconciled int) {
	t.Helper()
	ctx := context.Background()
	for _, id := range jobIDs {
		rec, err := st.GetJob(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		remote, err := service.GetPreRecorded(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Job.Status != api.StatusDone || !bytes.Equal(rec.Job.Result, remote.Result) || len(rec.Job.Result) == 0 {
			t.Errorf("job %s: %s with %d bytes of result, the service's %d", id, rec.Job.Status, len(rec.Job.Result), len(remote.Result))
		}
		if rec.Local.Deliveries != 1 || rec.Local.Final != api.EventTranscriptionSuccess {
			t.Errorf("job %s: %d deliveries applied (final %q), want 1", id, rec.Local.Deliveries, rec.Local.Final)
		}
		if rec.Local.Reconciled > 0 {
			reconciled++
			if rec.Local.Source != store.SourceReconcile || rec.Local.Reconciled != 1 {
				t.Errorf("job %s: source %q, %d reconciled", id, rec.Local.Source, rec.Local.Reconciled)
			}
		}
	}
	for _, id := range sessionIDs {
		rec, err := st.GetJob(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Job.Status != api.StatusDone || rec.Local.Final != api.EventLiveEndSession {
			t.Errorf("session %s: %s, final %q", id, rec.Job.Status, rec.Local.Final)
		}
		remote, err := service.GetLive(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var res struct{ Messages []string }
		if err := json.Unmarshal(remote.Result, &res); err != nil {
			t.Fatal(err)
		}
		want := map[string]int{}
		finals := 0
		for _, m := range res.Messages {
			id, _ := reconcile.Identity([]byte(m))
			want[id]++
			if strings.Contains(m, `"is_final":true`) {
				finals++
			}
		}
		msgs, err := st.LiveMessages(ctx, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		storedFinals := 0
		for _, m := range msgs {
			mid, _ := reconcile.Identity(m.Payload)
			got[mid]++
			if m.Category == api.CategoryFinalTranscripts {
				storedFinals++
			}
		}
		if len(msgs) != len(res.Messages) || finals == 0 || storedFinals != finals {
			t.Errorf("session %s: %d messages stored (%d finals), the service kept %d (%d finals)", id, len(msgs), storedFinals, len(res.Messages), finals)
		}
		for mid, n := range want {
			if got[mid] != n {
				t.Errorf("session %s: a message stored %d times, kept %d times by the service", id, got[mid], n)
				break
			}
		}
		if rec.Local.Reconciled > 0 {
			reconciled++
		}
	}
	return reconciled
}

// With the sandbox dropping half of its callbacks, every job ends done with the service's
// result and every session with every message the service kept, each applied once; the jobs
// and sessions reconciled are counted, in the records, the metrics and one job.reconciled each.
func TestReconcileDroppedCallbacks(t *testing.T) {
	w := dropWorld(t, 0.5, 7)
	ln := listen(t)
	cfg := kitConfig(t.TempDir(), ln, w.sandbox)
	quickReconcile(&cfg)
	all := &recorder{}
	k := startKit(t, cfg, ln, WithService(w.service), WithEventHandler(EventHandler{Name: "all", Func: all.handle}))
	subm, err := k.Submitter()
	if err != nil {
		t.Fatal(err)
	}
	jobIDs, sessionIDs := submitAll(t, subm, w, 6, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, id := range append(slices.Clone(jobIDs), sessionIDs...) {
		if rec, err := WaitJob(ctx, k.Records(), id, 100*time.Millisecond, nil); err != nil || rec.Job.Status != api.StatusDone {
			t.Fatalf("%s: %v %s", id, err, rec.Job.Status)
		}
	}
	// Sessions ended by their own end_session are checked once more, After their end.
	testwait.For(t, "the reconciliation list empty", 30*time.Second, func() bool {
		due, err := k.store.DueReconciles(context.Background(), time.Now().Add(time.Hour), 0)
		return err == nil && len(due) == 0
	})
	reconciled := checkComplete(t, k.store, w.service, jobIDs, sessionIDs)
	if reconciled == 0 {
		t.Fatal("nothing was reconciled: the sandbox dropped no callback")
	}
	testwait.For(t, "job.reconciled events", 30*time.Second, func() bool {
		return countType(all, api.EventJobReconciled) == reconciled
	})
	time.Sleep(300 * time.Millisecond) // a duplicate would be out by now
	if n := countType(all, api.EventJobReconciled); n != reconciled {
		t.Errorf("%d job.reconciled events, %d jobs and sessions reconciled", n, reconciled)
	}
	if got := sumCounter(t, k.Metrics(), "scribehook_jobs_reconciled_total"); got != float64(reconciled) {
		t.Errorf("scribehook_jobs_reconciled_total %v, want %d", got, reconciled)
	}
	// One job.succeeded per job and session: nothing applied twice.
	for _, id := range append(slices.Clone(jobIDs), sessionIDs...) {
		n := 0
		for _, ev := range all.of(id) {
			if ev.Type == api.EventJobSucceeded {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: %d job.succeeded events", id, n)
		}
	}
	t.Logf("%d of %d jobs and sessions reconciled", reconciled, len(jobIDs)+len(sessionIDs))
}

// Serve stopped while the jobs finish, started again once the sandbox has given up retrying:
// every job and session is completed from the service, once.
func TestReconcileAfterDowntime(t *testing.T) {
	w := dropWorld(t, 0, 0)
	dir := t.TempDir()
	ln := listen(t)
	addr := ln.Addr().String()
	cfg := kitConfig(dir, ln, w.sandbox)
	quickReconcile(&cfg)
	k, err := New(context.Background(), cfg, WithService(w.service), WithSecrets(configs.Secrets{APIKey: testKey}), WithLogger(logx.Discard()))
	if err != nil {
		t.Fatal(err)
	}
	subm, err := k.Submitter()
	if err != nil {
		t.Fatal(err)
	}
	_ = ln.Close() // serve is down: every callback fails
	jobIDs, sessionIDs := submitAll(t, subm, w, 3, 1)
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	// The sandbox finishes the jobs and gives up its retries (QuickRetries: about 1.5 s).
	ctx := context.Background()
	testwait.For(t, "the service to finish", 60*time.Second, func() bool {
		for _, id := range jobIDs {
			if j, err := w.service.GetPreRecorded(ctx, id); err != nil || !j.Status.Final() {
				return false
			}
		}
		return true
	})
	time.Sleep(3 * time.Second)
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	all := &recorder{}
	cfg2 := kitConfig(dir, ln2, w.sandbox)
	quickReconcile(&cfg2)
	k2 := startKit(t, cfg2, ln2, WithService(w.service), WithEventHandler(EventHandler{Name: "all", Func: all.handle}))
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for _, id := range append(slices.Clone(jobIDs), sessionIDs...) {
		if rec, err := WaitJob(wctx, k2.Records(), id, 100*time.Millisecond, nil); err != nil || rec.Job.Status != api.StatusDone {
			t.Fatalf("%s: %v %s", id, err, rec.Job.Status)
		}
	}
	if n := checkComplete(t, k2.store, w.service, jobIDs, sessionIDs); n != len(jobIDs)+len(sessionIDs) {
		t.Errorf("%d reconciled, want all %d", n, len(jobIDs)+len(sessionIDs))
	}
	testwait.For(t, "job.overdue and job.reconciled for each", 30*time.Second, func() bool {
		return countType(all, api.EventJobOverdue) == len(jobIDs)+len(sessionIDs) && countType(all, api.EventJobReconciled) == len(jobIDs)+len(sessionIDs)
	})
	var od api.OverdueData
	for _, ev := range all.of(jobIDs[0]) {
		if ev.Type == api.EventJobOverdue {
			if err := json.Unmarshal(ev.Data, &od); err != nil {
				t.Fatal(err)
			}
		}
	}
	if od.JobID != jobIDs[0] || od.ServiceStatus != api.StatusDone || od.Kind != api.KindPreRecorded {
		t.Errorf("job.overdue data %+v", od)
	}
}

func countType(r *recorder, typ string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ev := range r.events {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// sumCounter sums the counter name over its labels in reg.
func sumCounter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// envReconcileChild makes the test binary a kit process for TestReconcileKilled.
const envReconcileChild = "SCRIBEHOOK_RECONCILE_CHILD"

// announcing says "get" on stdout after each answer of the service to a GET, and holds the
// answer a moment: the parent kills the process there, in the middle of a reconciliation.
type announcing struct{ next http.RoundTripper }

func (a announcing) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(req)
	if req.Method == http.MethodGet && err == nil {
		fmt.Println("get")
		time.Sleep(30 * time.Millisecond)
	}
	return resp, err
}

// runReconcileChild runs a kit with quick reconciliation on the database and service of spec
// ("dsn service") until it is killed.
func runReconcileChild(spec string) int {
	parts := strings.Fields(spec)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := kitConfig(filepath.Dir(parts[0]), ln, parts[1])
	quickReconcile(&cfg)
	k, err := New(context.Background(), cfg, WithLogger(logx.Discard()), WithSecrets(configs.Secrets{APIKey: testKey}),
		WithHTTPClient(&http.Client{Transport: announcing{http.DefaultTransport}}),
		// The parent's handler of the same name gets the events this process queued.
		WithEventHandler(EventHandler{Name: "all", Func: func(ctx context.Context, _ api.Event) error { <-ctx.Done(); select {} }}))
	if err == nil {
		err = k.Start(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	_ = k.Serve(ln)
	return 0
}

// kill -9 in the middle of reconciliation, three times, each after a few of the service's
// answers: the last process completes every job and session, and nothing is applied twice nor
// emitted twice.
func TestReconcileKilled(t *testing.T) {
	w := dropWorld(t, 1, 1) // every callback lost: everything comes by reconciliation
	dir := t.TempDir()
	dsn := filepath.Join(dir, "scribehook.db")
	cfg := configs.Default()
	cfg.Store.DSN = dsn
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	subm := &Submitter{Store: st, Service: w.service, PublicURL: "http://127.0.0.1:9"}
	jobIDs, sessionIDs := submitAll(t, subm, w, 8, 2)
	_ = st.Close()
	for round, after := range []int{3, 5, 2} {
		child := exec.Command(os.Args[0], "-test.run=^$")
		child.Env = append(os.Environ(), envReconcileChild+"="+dsn+" "+w.sandbox)
		out, err := child.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		child.Stderr = os.Stderr
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		gets := 0
		for gets < after && lines.Scan() {
			if lines.Text() == "get" {
				gets++
			}
		}
		if err := child.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = child.Wait()
		t.Logf("round %d: killed after %d answers of the service", round, gets)
	}
	ln := listen(t)
	cfg2 := kitConfig(dir, ln, w.sandbox)
	quickReconcile(&cfg2)
	all := &recorder{}
	k := startKit(t, cfg2, ln, WithService(w.service), WithEventHandler(EventHandler{Name: "all", Func: all.handle}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, id := range append(slices.Clone(jobIDs), sessionIDs...) {
		if rec, err := WaitJob(ctx, k.Records(), id, 100*time.Millisecond, nil); err != nil || rec.Job.Status != api.StatusDone {
			t.Fatalf("%s: %v %s", id, err, rec.Job.Status)
		}
	}
	testwait.For(t, "the reconciliation list empty", 30*time.Second, func() bool {
		due, err := k.store.DueReconciles(context.Background(), time.Now().Add(time.Hour), 0)
		return err == nil && len(due) == 0
	})
	if n := checkComplete(t, k.store, w.service, jobIDs, sessionIDs); n != len(jobIDs)+len(sessionIDs) {
		t.Errorf("%d reconciled, want all %d", n, len(jobIDs)+len(sessionIDs))
	}
	// The events of the killed processes wait in the queue for this one's handler: each job
	// and session has one job.succeeded and one job.reconciled.
	testwait.For(t, "every job's events", 30*time.Second, func() bool {
		return countType(all, api.EventJobSucceeded) >= len(jobIDs)+len(sessionIDs)
	})
	time.Sleep(300 * time.Millisecond)
	for _, id := range append(slices.Clone(jobIDs), sessionIDs...) {
		counts := map[string]int{}
		for _, ev := range all.of(id) {
			counts[ev.Type]++
		}
		if counts[api.EventJobSucceeded] != 1 || counts[api.EventJobReconciled] != 1 || counts[api.EventJobOverdue] != 1 {
			t.Errorf("%s: events %v, want one job.succeeded, job.reconciled and job.overdue", id, counts)
		}
	}
}

// An operator disables a sink and enables it again: the other sinks whose filters take
// sink.* get sink.disabled (with the reason) then sink.enabled, once each; the sink itself gets
// neither.
func TestSinkStateEvents(t *testing.T) {
	w := newWorld(t)
	ln := listen(t)
	cfg := kitConfig(t.TempDir(), ln, w.sandbox)
	ops, archive := &recorder{}, &recorder{}
	k := startKit(t, cfg, ln, WithService(w.service),
		WithEventHandler(EventHandler{Name: "ops", Filter: sinks.Filter{Events: []string{"sink.*"}}, Func: ops.handle}),
		WithEventHandler(EventHandler{Name: "archive", Func: archive.handle}))
	ctx := context.Background()
	if err := k.dispatch.Disable(ctx, "archive", "disk swap"); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "sink.disabled", 10*time.Second, func() bool { return countType(ops, api.EventSinkDisabled) == 1 })
	if err := k.dispatch.Enable(ctx, "archive"); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "sink.enabled", 10*time.Second, func() bool { return countType(ops, api.EventSinkEnabled) == 1 })
	time.Sleep(300 * time.Millisecond)
	ops.mu.Lock()
	defer ops.mu.Unlock()
	if len(ops.events) != 2 {
		t.Fatalf("ops got %d events", len(ops.events))
	}
	var d api.SinkStateData
	if err := json.Unmarshal(ops.events[0].Data, &d); err != nil || d.Sink != "archive" || !d.Disabled || d.Reason != "disk swap" || ops.events[0].JobID != "" {
		t.Errorf("sink.disabled %+v (%v)", d, err)
	}
	if n := countType(archive, api.EventSinkDisabled) + countType(archive, api.EventSinkEnabled); n != 0 {
		t.Errorf("the sink itself got %d of its own state events", n)
	}
}

// reconcile.catch_up: a job and a session created at the service by someone else, whose
// callbacks never come, are listed, and applied with every message in the session's callback
// categories; a job the store already has is left alone.
func TestReconcileCatchUp(t *testing.T) {
	w := dropWorld(t, 1, 1)
	ln := listen(t)
	cfg := kitConfig(t.TempDir(), ln, w.sandbox)
	quickReconcile(&cfg)
	cfg.Reconcile.CatchUp = true
	k := startKit(t, cfg, ln, WithService(w.service))
	ctx := context.Background()
	created, err := w.service.CreatePreRecorded(ctx, api.PreRecordedRequest{AudioURL: w.audio, Callback: api.Bool(true),
		CallbackConfig: &api.CallbackConfig{URL: "http://127.0.0.1:9/v1/callbacks/static"}})
	if err != nil {
		t.Fatal(err)
	}
	live, err := w.service.CreateLive(ctx, api.LiveRequest{SampleRate: api.Int(16000), Callback: api.Bool(true),
		CallbackConfig: &api.LiveCallbackConfig{URL: "http://127.0.0.1:9/v1/callbacks/static", MessagesConfig: api.EveryMessage(true)}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.service.StreamLive(ctx, live.URL, bytes.NewReader(w.wav), submitter.StreamOptions{SampleRate: 16000, BitDepth: 16, Channels: 1}, nil); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for _, id := range []string{created.ID, live.ID} {
		if rec, err := WaitJob(wctx, k.Records(), id, 100*time.Millisecond, nil); err != nil || rec.Job.Status != api.StatusDone {
			t.Fatalf("%s: %v %s", id, err, rec.Job.Status)
		}
	}
	if n := checkComplete(t, k.store, w.service, []string{created.ID}, []string{live.ID}); n != 2 {
		t.Errorf("%d reconciled, want 2", n)
	}
	// A later catch-up lists them again and leaves them alone.
	out, err := k.Reconcile(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.JobID == created.ID || o.JobID == live.ID {
			t.Errorf("caught up again: %+v", o)
		}
	}
}
