package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// countingStore counts the Ingest calls that reach the real store.
type countingStore struct {
	store.Store
	calls, deliveries atomic.Int64
}

func (c *countingStore) Ingest(ctx context.Context, ds []store.Delivery) ([]store.IngestResult, error) {
	c.calls.Add(1)
	c.deliveries.Add(int64(len(ds)))
	return c.Store.Ingest(ctx, ds)
}

func delivery(key string) store.Delivery {
	return store.Delivery{
		DedupeKey: key, Route: "job", Kind: api.CallbackLiveMessage, Event: "live.transcript",
		JobID: "session-1", PartitionKey: "session-1", Body: []byte(`{"key":"` + key + `"}`),
		ReceivedAt: time.Now(),
	}
}

// TestBatcherConcurrent: many concurrent callers, with duplicates between and within
// goroutines, all get the right row, and they share far fewer transactions than submits.
func TestBatcherConcurrent(t *testing.T) {
	const goroutines, perG = 64, 200
	cs := &countingStore{Store: teststore.OpenSQLite(t, sqlite.Config{Synchronous: "full"})}
	b := store.NewBatcher(cs, store.BatcherOptions{})
	defer b.Close()

	type outcome struct {
		key string
		res store.IngestResult
	}
	results := make([][]outcome, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				var d store.Delivery
				resubmit := false
				switch {
				case i%100 == 0 || i%100 == 48: // the same unparseable body from every goroutine
					d = store.Delivery{Route: "account", Quarantine: "not JSON", Body: fmt.Appendf(nil, "garbage %d", i)}
				case i%4 == 3: // the same key from every goroutine
					d = delivery(fmt.Sprint("shared-", i))
				case i%4 == 2: // this goroutine's previous delivery again
					d, resubmit = delivery(fmt.Sprintf("g%d-%d", g, i-1)), true
				default:
					d = delivery(fmt.Sprintf("g%d-%d", g, i))
				}
				res, err := b.Submit(context.Background(), d)
				if err != nil {
					t.Errorf("Submit: %v", err)
					return
				}
				key := d.DedupeKey
				if d.Quarantine != "" {
					key = "quarantine:" + string(d.Body)
				}
				results[g] = append(results[g], outcome{key, res})
				if resubmit && !(res.Duplicate && res.ID == results[g][i-1].res.ID) {
					t.Errorf("resubmitted %s = %+v, want duplicate of %d", key, res, results[g][i-1].res.ID)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	type agg struct {
		id       int64
		firsts   int
		submits  int
		quarantn bool
	}
	byKey := map[string]*agg{}
	for g := range results {
		for _, o := range results[g] {
			a := byKey[o.key]
			if a == nil {
				a = &agg{id: o.res.ID, quarantn: o.res.Quarantined}
				byKey[o.key] = a
			}
			a.submits++
			if !o.res.Duplicate {
				a.firsts++
			}
			if o.res.ID != a.id || o.res.Quarantined != a.quarantn {
				t.Errorf("%s: result %+v, another submit got row %d", o.key, o.res, a.id)
			}
		}
	}
	inboxIDs := map[int64]string{}
	var inbox int64
	for key, a := range byKey {
		if a.firsts != 1 {
			t.Errorf("%s: %d of %d submits were not duplicates, want exactly 1", key, a.firsts, a.submits)
		}
		if a.quarantn {
			continue
		}
		inbox++
		if other, ok := inboxIDs[a.id]; ok {
			t.Errorf("%s and %s share inbox row %d", key, other, a.id)
		}
		inboxIDs[a.id] = key
		row, err := cs.InboxRow(context.Background(), a.id)
		if err != nil || row.DedupeKey != key {
			t.Errorf("row %d = %q, %v; want %s", a.id, row.DedupeKey, err, key)
		}
	}
	if n, err := cs.InboxBacklog(context.Background()); err != nil || n != inbox {
		t.Errorf("backlog = %d, %v; want %d distinct keys", n, err, inbox)
	}
	q, err := cs.Quarantined(context.Background(), 0)
	if err != nil || len(q) != 2*perG/100 {
		t.Errorf("quarantine rows = %d, %v; want %d", len(q), err, 2*perG/100)
	}
	submits := int64(goroutines * perG)
	calls := cs.calls.Load()
	t.Logf("%d submits in %d Ingest calls (%.1f per transaction)", submits, calls, float64(submits)/float64(calls))
	if calls*8 > submits {
		t.Errorf("%d Ingest calls for %d submits: batches average under 8", calls, submits)
	}
	if cs.deliveries.Load() != submits {
		t.Errorf("%d deliveries reached the store, want %d", cs.deliveries.Load(), submits)
	}
}

// fakeStore records batches; Ingest can be held at a gate and made to fail.
type fakeStore struct {
	store.Store
	mu      sync.Mutex
	batches [][]string
	nextID  int64
	gate    chan struct{}     // when set, Ingest waits for it to close
	started chan int          // when set, receives each batch's size as Ingest begins
	fail    func(n int) error // error for the nth batch (0-based), nil to succeed
	results func(int) int     // overrides the number of results returned
}

func (f *fakeStore) Ingest(_ context.Context, ds []store.Delivery) ([]store.IngestResult, error) {
	f.mu.Lock()
	n := len(f.batches)
	keys := make([]string, len(ds))
	for i, d := range ds {
		keys[i] = d.DedupeKey
	}
	f.batches = append(f.batches, keys)
	gate, started, fail := f.gate, f.started, f.fail
	f.mu.Unlock()
	if started != nil {
		started <- len(ds)
	}
	if gate != nil {
		<-gate
	}
	if fail != nil {
		if err := fail(n); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]store.IngestResult, len(ds))
	for i := range out {
		f.nextID++
		out[i].ID = f.nextID
	}
	if f.results != nil {
		out = out[:f.results(len(out))]
	}
	return out, nil
}

func (f *fakeStore) seen() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]string(nil), f.batches...)
}

func waitQueued(t *testing.T, b *store.Batcher, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for b.Queued() < n {
		if time.Now().After(deadline) {
			t.Fatalf("queue reached %d, want %d", b.Queued(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBatcherFailure: every Submit of a failed batch gets the batch's error; later batches
// are unaffected.
func TestBatcherFailure(t *testing.T) {
	busy := errors.New("database is locked")
	f := &fakeStore{fail: func(n int) error {
		if n == 0 {
			return busy
		}
		return nil
	}}
	// MaxWait holds the first batch open until all five arrived, so they share it.
	b := store.NewBatcher(f, store.BatcherOptions{MaxBatch: 5, MaxWait: time.Minute})
	defer b.Close()
	errs := make([]error, 5)
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() { _, errs[i] = b.Submit(context.Background(), delivery(fmt.Sprint("k", i))) })
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, busy) {
			t.Errorf("submit %d error = %v, want the batch's error", i, err)
		}
	}
	if got := f.seen(); len(got) != 1 || len(got[0]) != 5 {
		t.Errorf("batches = %v, want one of 5", got)
	}
	// The next batch (five more, so MaxWait does not hold it) succeeds.
	for i := range 5 {
		wg.Go(func() {
			res, err := b.Submit(context.Background(), delivery(fmt.Sprint("after", i)))
			if err != nil || res.ID == 0 {
				t.Errorf("Submit after a failed batch = %+v, %v", res, err)
			}
		})
	}
	wg.Wait()
}

func TestBatcherResultCountMismatch(t *testing.T) {
	f := &fakeStore{results: func(n int) int { return n - 1 }}
	b := store.NewBatcher(f, store.BatcherOptions{})
	defer b.Close()
	if _, err := b.Submit(context.Background(), delivery("a")); err == nil {
		t.Error("Submit succeeded although the store returned no result for it")
	}
}

// TestBatcherCancelInFlight: a caller that gives up while its batch commits gets its context
// error at once; the other callers of the batch get their results.
func TestBatcherCancelInFlight(t *testing.T) {
	gate := make(chan struct{})
	started := make(chan int, 1)
	f := &fakeStore{gate: gate, started: started}
	b := store.NewBatcher(f, store.BatcherOptions{MaxBatch: 2, MaxWait: time.Minute})
	defer b.Close()

	ctx, cancel := context.WithCancel(context.Background())
	aErr := make(chan error, 1)
	go func() {
		_, err := b.Submit(ctx, delivery("a"))
		aErr <- err
	}()
	type result struct {
		res store.IngestResult
		err error
	}
	bRes := make(chan result, 1)
	go func() {
		res, err := b.Submit(context.Background(), delivery("b"))
		bRes <- result{res, err}
	}()
	if n := <-started; n != 2 {
		t.Fatalf("batch of %d, want both", n)
	}
	cancel()
	if err := <-aErr; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Submit error = %v, want context.Canceled", err)
	}
	close(gate)
	r := <-bRes
	if r.err != nil || r.res.ID == 0 {
		t.Errorf("other Submit of the batch = %+v, %v", r.res, r.err)
	}
}

// TestBatcherCancelQueued: a caller that gives up while queued is left out of its batch.
func TestBatcherCancelQueued(t *testing.T) {
	gate := make(chan struct{})
	started := make(chan int, 4)
	f := &fakeStore{gate: gate, started: started}
	b := store.NewBatcher(f, store.BatcherOptions{})
	defer b.Close()

	first := make(chan error, 1)
	go func() {
		_, err := b.Submit(context.Background(), delivery("first"))
		first <- err
	}()
	<-started // "first" is being committed; later submits queue

	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := b.Submit(ctx, delivery("gave-up"))
		gaveUp <- err
	}()
	waitQueued(t, b, 1)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Submit error = %v", err)
	}
	kept := make(chan error, 1)
	go func() {
		_, err := b.Submit(context.Background(), delivery("kept"))
		kept <- err
	}()
	waitQueued(t, b, 2)
	close(gate)
	if err := <-first; err != nil {
		t.Errorf("first: %v", err)
	}
	if err := <-kept; err != nil {
		t.Errorf("kept: %v", err)
	}
	for _, batch := range f.seen() {
		for _, k := range batch {
			if k == "gave-up" {
				t.Errorf("the cancelled delivery reached the store: %v", f.seen())
			}
		}
	}
}

// TestBatcherCloseDrains: Close commits what is queued before it returns; Submit after Close
// fails.
func TestBatcherCloseDrains(t *testing.T) {
	gate := make(chan struct{})
	started := make(chan int, 16)
	f := &fakeStore{gate: gate, started: started}
	b := store.NewBatcher(f, store.BatcherOptions{MaxBatch: 4})

	const n = 10
	errs := make(chan error, n+1)
	go func() {
		_, err := b.Submit(context.Background(), delivery("first"))
		errs <- err
	}()
	<-started
	for i := range n {
		go func() {
			_, err := b.Submit(context.Background(), delivery(fmt.Sprint("q", i)))
			errs <- err
		}()
	}
	waitQueued(t, b, n)

	if err := testwait.Held(t, "Close before the queue was committed", 20*time.Millisecond, b.Close, func() { close(gate) }); err != nil {
		t.Errorf("Close: %v", err)
	}
	for range n + 1 {
		if err := <-errs; err != nil {
			t.Errorf("queued Submit during Close: %v", err)
		}
	}
	total := 0
	for _, batch := range f.seen() {
		if len(batch) > 4 {
			t.Errorf("batch of %d over MaxBatch 4", len(batch))
		}
		total += len(batch)
	}
	if total != n+1 {
		t.Errorf("%d deliveries committed, want %d", total, n+1)
	}
	if _, err := b.Submit(context.Background(), delivery("late")); !errors.Is(err, store.ErrBatcherClosed) {
		t.Errorf("Submit after Close error = %v, want ErrBatcherClosed", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestBatcherMaxBatch(t *testing.T) {
	var sizes []int
	var mu sync.Mutex
	cs := &countingStore{Store: teststore.OpenSQLite(t, sqlite.Config{Synchronous: "normal"})}
	b := store.NewBatcher(cs, store.BatcherOptions{MaxBatch: 8, OnCommit: func(n int, _ time.Duration, err error) {
		if err != nil {
			t.Errorf("OnCommit error: %v", err)
		}
		mu.Lock()
		sizes = append(sizes, n)
		mu.Unlock()
	}})
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			if _, err := b.Submit(context.Background(), delivery(fmt.Sprint("m", i))); err != nil {
				t.Errorf("Submit: %v", err)
			}
		})
	}
	wg.Wait()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range sizes {
		if n > 8 || n < 1 {
			t.Errorf("batch of %d, want 1..8", n)
		}
		total += n
	}
	if total != 200 || int64(len(sizes)) != cs.calls.Load() {
		t.Errorf("OnCommit saw %d deliveries in %d batches; store saw %d calls", total, len(sizes), cs.calls.Load())
	}
}

func TestBatcherRejectsEmptyKey(t *testing.T) {
	f := &fakeStore{}
	b := store.NewBatcher(f, store.BatcherOptions{})
	defer b.Close()
	if _, err := b.Submit(context.Background(), delivery("")); err == nil || !strings.Contains(err.Error(), "dedupe key") {
		t.Errorf("Submit without a dedupe key error = %v", err)
	}
	// A quarantined delivery needs none: the store keys it by route and body.
	if _, err := b.Submit(context.Background(), store.Delivery{Route: "r", Quarantine: "bad", Body: []byte("x")}); err != nil {
		t.Errorf("quarantined Submit: %v", err)
	}
	if got := f.seen(); len(got) != 1 {
		t.Errorf("store saw %d batches, want only the quarantined delivery's", len(got))
	}
}

// BenchmarkBatcherIngest measures durable ingestion of small (300-byte) callbacks through
// group commit on a temp-file SQLite store, with a fixed number of concurrent submitters (as
// many HTTP requests in flight): each waits for its commit before submitting again.
//
//	go test ./store -run '^$' -bench 'BatcherIngest|IngestUnbatched' -benchtime 100000x
func BenchmarkBatcherIngest(b *testing.B) {
	for _, mode := range []string{"full", "normal"} {
		for _, clients := range []int{64, 256} {
			b.Run(fmt.Sprintf("sync=%s/clients=%d", mode, clients), func(b *testing.B) {
				s := teststore.OpenSQLite(b, sqlite.Config{Synchronous: mode})
				var batches atomic.Int64
				bat := store.NewBatcher(s, store.BatcherOptions{OnCommit: func(int, time.Duration, error) { batches.Add(1) }})
				benchSubmit(b, clients, func(ctx context.Context, d store.Delivery) error {
					_, err := bat.Submit(ctx, d)
					return err
				})
				if err := bat.Close(); err != nil {
					b.Fatal(err)
				}
				if n := batches.Load(); n > 0 {
					b.ReportMetric(float64(b.N)/float64(n), "deliveries/batch")
				}
			})
		}
	}
}

// BenchmarkIngestUnbatched is the baseline: each submitter commits its own transaction.
func BenchmarkIngestUnbatched(b *testing.B) {
	for _, mode := range []string{"full", "normal"} {
		b.Run("sync="+mode+"/clients=64", func(b *testing.B) {
			s := teststore.OpenSQLite(b, sqlite.Config{Synchronous: mode})
			benchSubmit(b, 64, func(ctx context.Context, d store.Delivery) error {
				_, err := s.Ingest(ctx, []store.Delivery{d})
				return err
			})
		})
	}
}

func benchSubmit(b *testing.B, clients int, submit func(context.Context, store.Delivery) error) {
	body := []byte(`{"id":"0f4e7a55-4b8d-4c7e-9f0d-2f3b5b7b9a11","event":"live.transcript","payload":{"type":"transcript","session_id":"0f4e7a55","created_at":"2024-03-01T10:00:00.000Z","data":{"id":"u1","is_final":true,"utterance":{"text":"hello world","start":1.5,"end":2.25,"language":"en","channel":0}}}}`)
	body = append(body, bytes.Repeat([]byte(" "), 300-len(body))...) // 300 bytes, still JSON
	var seq atomic.Int64
	b.SetBytes(int64(len(body)))
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((clients + procs - 1) / procs) // RunParallel starts parallelism × GOMAXPROCS goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			d := store.Delivery{
				DedupeKey: "bench-" + strconv.FormatInt(seq.Add(1), 10), Route: "job", Kind: api.CallbackLiveMessage,
				Event: "live.transcript", JobID: "session-1", MessageType: api.MessageTranscript,
				Category: api.CategoryFinalTranscripts, PartitionKey: "session-1",
				Headers: map[string]string{"content-type": "application/json"}, Body: body, ReceivedAt: time.Now(),
			}
			if err := submit(ctx, d); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
}

// takingStore is fakeStore with IngestTaking: its transaction begins (busy waits for it to
// close, like a writer held by a group of applies), then it takes the batch.
type takingStore struct {
	*fakeStore
	busy     chan struct{}
	begun    chan struct{} // receives once per transaction, before it waits on busy
	beginErr error
}

func (t *takingStore) IngestTaking(ctx context.Context, take func() []store.Delivery) ([]store.IngestResult, error) {
	if t.begun != nil {
		t.begun <- struct{}{}
	}
	if t.busy != nil {
		<-t.busy
	}
	if t.beginErr != nil {
		return nil, t.beginErr
	}
	ds := take()
	if len(ds) == 0 {
		return nil, nil
	}
	return t.fakeStore.Ingest(ctx, ds)
}

// With a store that takes the batch once its transaction has begun, what arrives while the
// writer is busy joins that batch.
func TestBatcherTakesOnceTheWriterIsFree(t *testing.T) {
	ts := &takingStore{fakeStore: &fakeStore{}, busy: make(chan struct{}), begun: make(chan struct{}, 1)}
	b := store.NewBatcher(ts, store.BatcherOptions{})
	defer b.Close()
	results := make(chan error, 10)
	submit := func(key string) {
		go func() {
			_, err := b.Submit(context.Background(), store.Delivery{DedupeKey: key})
			results <- err
		}()
	}
	submit("first")
	<-ts.begun // the committer waits for the writer
	for i := range 9 {
		submit(fmt.Sprintf("k%d", i))
	}
	for b.Queued() < 10 {
		time.Sleep(time.Millisecond)
	}
	close(ts.busy)
	for range 10 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.batches) != 1 || len(ts.batches[0]) != 10 {
		t.Fatalf("batches %v, want one of all 10", ts.batches)
	}
}

// A transaction that cannot begin fails what is queued, as a failed batch does, and the
// committer goes on.
func TestBatcherTakingBeginFails(t *testing.T) {
	ts := &takingStore{fakeStore: &fakeStore{}, beginErr: errors.New("disk gone")}
	b := store.NewBatcher(ts, store.BatcherOptions{})
	defer b.Close()
	if _, err := b.Submit(context.Background(), store.Delivery{DedupeKey: "a"}); err == nil || !strings.Contains(err.Error(), "disk gone") {
		t.Fatalf("Submit: %v, want the begin error", err)
	}
	ts.beginErr = nil // read by the committer only after the next Submit queues
	if res, err := b.Submit(context.Background(), store.Delivery{DedupeKey: "b"}); err != nil || res.ID != 1 {
		t.Fatalf("Submit after the failure: %+v, %v", res, err)
	}
}
