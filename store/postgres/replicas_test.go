package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
	"github.com/scribehook/scribehook/store/storetest"
)

// The tests of this file open two or more Stores on one schema: separate pools, as separate
// replicas would have, so every guarantee they check rests on the database alone.

func replicas(t *testing.T, n int) []*Store {
	t.Helper()
	dsn := newSchema(t)
	out := make([]*Store, n)
	for i := range out {
		out[i] = open(t, dsn)
	}
	return out
}

// atOnce runs fn on per goroutines of every replica at once and waits for them all; r is the
// replica's index, and rng, seeded with (r, g), gives each goroutine an order of its own.
func atOnce(rs []*Store, per int, fn func(r int, s *Store, rng *rand.Rand)) {
	var wg sync.WaitGroup
	for r, s := range rs {
		for g := range per {
			wg.Go(func() { fn(r, s, rand.New(rand.NewPCG(uint64(r), uint64(g)))) })
		}
	}
	wg.Wait()
}

// ingestLive ingests n live deliveries through s, spread over groups sessions (or jobs) named
// prefix0, prefix1, …
func ingestLive(t *testing.T, s *Store, n, groups int, prefix string) ([]store.Delivery, []store.IngestResult) {
	t.Helper()
	var ds []store.Delivery
	for i := range n {
		ds = append(ds, liveDelivery(keyOf(i), fmt.Sprint(prefix, i%groups)))
	}
	res, err := s.Ingest(t.Context(), ds)
	if err != nil {
		t.Fatal(err)
	}
	return ds, res
}

func liveDelivery(key, session string) store.Delivery {
	return store.Delivery{
		DedupeKey: key, Route: "job", Kind: api.CallbackLiveMessage, Event: "live.transcript",
		JobID: session, MessageType: api.MessageTranscript, Category: api.CategoryFinalTranscripts,
		PartitionKey: session, Headers: map[string]string{"webhook-id": key},
		Body: []byte(`{"key":"` + key + `"}`), ReceivedAt: time.Now(),
	}
}

// TestReplicasIngestOnce: the same deliveries ingested at once by two replicas, several
// goroutines each, in different orders and overlapping batches (the service retrying to another
// replica), are stored once; every replica reports the same row for a key, and exactly one
// ingestion of each key reports it new. Batches sharing keys in opposite orders would deadlock
// if rows were inserted in batch order.
func TestReplicasIngestOnce(t *testing.T) {
	rs := replicas(t, 2)
	const keys, perReplica, batch = 200, 4, 32
	var (
		mu    sync.Mutex
		idOf  = map[string]int64{}
		fresh = map[string]int{}
	)
	atOnce(rs, perReplica, func(r int, s *Store, rng *rand.Rand) {
		for chunk := range slices.Chunk(rng.Perm(keys), batch) {
			var ds []store.Delivery
			for _, k := range chunk {
				ds = append(ds, liveDelivery(keyOf(k), "session"))
			}
			res, err := s.Ingest(context.Background(), ds)
			if err != nil {
				t.Errorf("replica %d: Ingest: %v", r, err)
				return
			}
			mu.Lock()
			for i, d := range ds {
				if prev, ok := idOf[d.DedupeKey]; ok && prev != res[i].ID {
					t.Errorf("%s: ids %d and %d", d.DedupeKey, prev, res[i].ID)
				}
				idOf[d.DedupeKey] = res[i].ID
				if !res[i].Duplicate {
					fresh[d.DedupeKey]++
				}
			}
			mu.Unlock()
		}
	})
	for k := range keys {
		if n := fresh[keyOf(k)]; n != 1 {
			t.Errorf("%s reported new %d times, want once", keyOf(k), n)
		}
	}
	var rows, distinct int
	if err := sqlDB(rs[0]).QueryRowContext(t.Context(), `SELECT count(*), count(DISTINCT dedupe_key) FROM inbox`).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != keys || distinct != keys {
		t.Errorf("inbox has %d rows (%d keys), want %d", rows, distinct, keys)
	}
	if n, err := rs[1].InboxBacklog(t.Context()); err != nil || n != keys {
		t.Errorf("backlog seen by the other replica = %d, %v; want %d", n, err, keys)
	}
}

// TestReplicasApplyOnce: both replicas apply every row at once. Each row's function runs once
// (the second Apply waits for the row's lock, then finds it done), and the live messages of
// each session are numbered 1..n across replicas.
func TestReplicasApplyOnce(t *testing.T) {
	rs := replicas(t, 2)
	const sessions, perSession = 3, 30
	ds, res := ingestLive(t, rs[0], sessions*perSession, sessions, "session-")
	var runs [sessions * perSession]atomic.Int32
	var applied, already atomic.Int32
	atOnce(rs, 4, func(r int, s *Store, rng *rand.Rand) {
		for _, i := range rng.Perm(len(ds)) {
			err := s.Apply(context.Background(), res[i].ID, func(ctx context.Context, tx store.Tx) error {
				runs[i].Add(1)
				_, err := tx.AppendLiveMessage(ctx, store.LiveMessage{
					SessionID: ds[i].JobID, Type: api.MessageTranscript, InboxID: res[i].ID,
					Payload: ds[i].Body, ReceivedAt: ds[i].ReceivedAt,
				})
				return err
			})
			switch {
			case err == nil:
				applied.Add(1)
			case errors.Is(err, store.ErrAlreadyApplied):
				already.Add(1)
			default:
				t.Errorf("replica %d: Apply(%d): %v", r, res[i].ID, err)
			}
		}
	})
	for i := range runs {
		if n := runs[i].Load(); n != 1 {
			t.Errorf("row %d: fn ran %d times, want once", res[i].ID, n)
		}
	}
	if applied.Load() != int32(len(ds)) || already.Load() != int32(7*len(ds)) {
		t.Errorf("applied %d, already applied %d; want %d and %d", applied.Load(), already.Load(), len(ds), 7*len(ds))
	}
	for i := range sessions {
		session := fmt.Sprint("session-", i)
		msgs, err := rs[i%2].LiveMessages(t.Context(), session, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != perSession {
			t.Errorf("%s has %d messages, want %d", session, len(msgs), perSession)
		}
		for j, m := range msgs {
			if m.Seq != int64(j+1) {
				t.Errorf("%s message %d has seq %d", session, j, m.Seq)
			}
		}
	}
}

// TestReplicaDiesMidApply: a replica whose connection dies while it applies a row (kill -9,
// a network cut) leaves the row pending, and the other replica, waiting for its lock, applies
// it as soon as the server has ended the dead session.
func TestReplicaDiesMidApply(t *testing.T) {
	rs := replicas(t, 2)
	res, err := rs[0].Ingest(t.Context(), []store.Delivery{liveDelivery("dying", "session")})
	if err != nil {
		t.Fatal(err)
	}
	id := res[0].ID
	pid := make(chan int, 1)
	release := make(chan struct{})
	deadErr := make(chan error, 1)
	go func() {
		deadErr <- rs[0].Apply(context.Background(), id, func(ctx context.Context, stx store.Tx) error {
			if _, err := stx.AppendLiveMessage(ctx, store.LiveMessage{SessionID: "session", InboxID: id, Payload: []byte(`{}`)}); err != nil {
				return err
			}
			var p int
			if err := sqlcore.DialectTx(stx).(*pgTx).q.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&p); err != nil {
				return err
			}
			pid <- p
			<-release // "killed" here: never returns before its connection is gone
			return nil
		})
	}()
	var victim int
	select {
	case victim = <-pid:
	case <-time.After(10 * time.Second):
		t.Fatal("first Apply did not start")
	}

	survivor := make(chan error, 1)
	ran := false
	go func() {
		survivor <- rs[1].Apply(context.Background(), id, func(ctx context.Context, stx store.Tx) error {
			ran = true
			seq, err := stx.AppendLiveMessage(ctx, store.LiveMessage{SessionID: "session", InboxID: id, Payload: []byte(`{}`)})
			if err == nil && seq != 1 {
				err = fmt.Errorf("seq %d after the dead Apply, want 1", seq)
			}
			return err
		})
	}()
	// The survivor waits for the row's lock.
	select {
	case err := <-survivor:
		t.Fatalf("second Apply returned while the first held the row: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := sqlDB(rs[1]).ExecContext(t.Context(), `SELECT pg_terminate_backend($1)`, victim); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-survivor:
		if err != nil || !ran {
			t.Fatalf("second Apply = %v (ran %v), want it applied", err, ran)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("second Apply still waiting after the first replica's session was ended")
	}
	close(release)
	if err := <-deadErr; err == nil {
		t.Error("the dead replica's Apply reported success")
	}
	row, err := rs[0].InboxRow(t.Context(), id)
	if err != nil || row.Status != store.InboxDone || row.Attempts != 1 {
		t.Errorf("row = %+v, %v; want done once", row, err)
	}
	if msgs, err := rs[0].LiveMessages(t.Context(), "session", 0, 0); err != nil || len(msgs) != 1 {
		t.Errorf("live messages = %d, %v; want 1", len(msgs), err)
	}
}

// TestReplicasJobUpdates: Applies of one job on two replicas at once each load the record,
// update it and put it back, as the handlers do; no update is lost, including those racing to
// create the record.
func TestReplicasJobUpdates(t *testing.T) {
	rs := replicas(t, 2)
	const jobs, perJob = 3, 20
	ds, res := ingestLive(t, rs[0], jobs*perJob, jobs, "job-")
	atOnce(rs, 3, func(r int, s *Store, rng *rand.Rand) {
		for _, i := range rng.Perm(len(ds)) {
			err := s.Apply(context.Background(), res[i].ID, func(ctx context.Context, tx store.Tx) error {
				rec, err := tx.Job(ctx, ds[i].JobID)
				switch {
				case errors.Is(err, store.ErrNotFound):
					rec = store.JobRecord{Job: api.Job{ID: ds[i].JobID, Status: api.StatusProcessing, Kind: api.KindLive,
						CreatedAt: api.Time{Time: time.Now()}}, Local: store.Local{Source: "callback"}}
				case err != nil:
					return err
				}
				time.Sleep(time.Millisecond) // widen the window between read and write
				rec.Local.Deliveries++
				return tx.PutJob(ctx, rec)
			})
			if err != nil && !errors.Is(err, store.ErrAlreadyApplied) {
				t.Errorf("replica %d: Apply: %v", r, err)
			}
		}
	})
	for j := range jobs {
		rec, err := rs[j%2].GetJob(t.Context(), fmt.Sprint("job-", j))
		if err != nil {
			t.Fatal(err)
		}
		if rec.Local.Deliveries != perJob {
			t.Errorf("job-%d counts %d deliveries, want %d (updates lost)", j, rec.Local.Deliveries, perJob)
		}
	}
}

func sinkEvent(id, key string) store.SinkDelivery {
	return store.SinkDelivery{Sink: "hook", EventID: id, OrderKey: key, Event: api.Event{
		ID: id, Type: "live.transcript", CreatedAt: api.Time{Time: time.Now()}, JobID: key, Kind: api.KindLive,
	}}
}

// TestReplicasClaimOnce: dispatchers of two replicas claim one sink at once and never get the
// same delivery; between them they deliver everything.
func TestReplicasClaimOnce(t *testing.T) {
	rs := replicas(t, 2)
	const n = 600
	var ds []store.SinkDelivery
	for i := range n {
		ds = append(ds, sinkEvent(fmt.Sprint("e", i), fmt.Sprint("job-", i%7)))
	}
	if err := rs[0].EnqueueSinkDeliveries(t.Context(), ds); err != nil {
		t.Fatal(err)
	}
	// Each claimer completes what it claims, from its own replica.
	var claimers []func() ([]store.SinkDelivery, error)
	for _, s := range rs {
		for range 4 {
			claimers = append(claimers, func() ([]store.SinkDelivery, error) {
				got, err := s.ClaimSinkDeliveries(context.Background(), "hook", false, time.Now(), time.Minute, 9)
				for _, d := range got {
					if err := s.CompleteSinkDelivery(context.Background(), d.ID); err != nil {
						t.Errorf("complete: %v", err)
					}
				}
				return got, err
			})
		}
	}
	if got := storetest.ClaimAll(t, claimers...); got != n {
		t.Errorf("%d deliveries claimed, want %d", got, n)
	}
	if d, err := rs[1].SinkDepth(t.Context(), "hook"); err != nil || d != 0 {
		t.Errorf("depth = %d, %v; want 0", d, err)
	}
}

// TestReplicasClaimOrdered: on an ordered sink, claimers of two replicas never hold two
// deliveries of one key at once, and each key's deliveries are delivered in queue order.
func TestReplicasClaimOrdered(t *testing.T) {
	rs := replicas(t, 2)
	const keys, perKey = 6, 25
	var ds []store.SinkDelivery
	for i := range perKey {
		for k := range keys {
			ds = append(ds, sinkEvent(fmt.Sprintf("k%d-%02d", k, i), fmt.Sprint("key-", k)))
		}
	}
	if err := rs[0].EnqueueSinkDeliveries(t.Context(), ds); err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		inFlight = map[string]string{} // order key → event in flight
		done     = map[string][]string{}
		total    atomic.Int32
	)
	deadline := time.Now().Add(time.Minute)
	atOnce(rs, 3, func(r int, s *Store, _ *rand.Rand) {
		for total.Load() < keys*perKey && time.Now().Before(deadline) {
			got, err := s.ClaimSinkDeliveries(context.Background(), "hook", true, time.Now(), time.Minute, 4)
			if err != nil {
				t.Errorf("replica %d: claim: %v", r, err)
				return
			}
			mu.Lock()
			for _, d := range got {
				if other, busy := inFlight[d.OrderKey]; busy {
					t.Errorf("%s claimed while %s of the same key is in flight", d.EventID, other)
				}
				inFlight[d.OrderKey] = d.EventID
			}
			mu.Unlock()
			time.Sleep(time.Millisecond) // "delivering"
			for _, d := range got {
				mu.Lock()
				delete(inFlight, d.OrderKey)
				done[d.OrderKey] = append(done[d.OrderKey], d.EventID)
				mu.Unlock()
				// Completed after leaving the in-flight set: the next of the key may be
				// claimed from the moment this commits.
				if err := s.CompleteSinkDelivery(context.Background(), d.ID); err != nil {
					t.Errorf("complete: %v", err)
				}
				total.Add(1)
			}
		}
	})
	for k := range keys {
		key := fmt.Sprint("key-", k)
		var want []string
		for i := range perKey {
			want = append(want, fmt.Sprintf("k%d-%02d", k, i))
		}
		if !slices.Equal(done[key], want) {
			t.Errorf("%s delivered in order %v, want %v", key, done[key], want)
		}
	}
}

// TestLeaseExpiryAcrossReplicas: a replica claims and dies without settling; the other gets
// nothing while the leases run, then every delivery the dead one held.
func TestLeaseExpiryAcrossReplicas(t *testing.T) {
	rs := replicas(t, 2)
	var ds []store.SinkDelivery
	for i := range 20 {
		ds = append(ds, sinkEvent(fmt.Sprint("e", i), fmt.Sprint("job-", i%3)))
	}
	if err := rs[0].EnqueueSinkDeliveries(t.Context(), ds); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	const lease = 30 * time.Second
	held, err := rs[0].ClaimSinkDeliveries(t.Context(), "hook", true, t0, lease, 0)
	if err != nil || len(held) != 3 {
		t.Fatalf("dying replica claimed %d (%v), want the 3 heads of an ordered sink", len(held), err)
	}
	more, err := rs[0].ClaimSinkDeliveries(t.Context(), "hook", false, t0, lease, 0)
	if err != nil || len(more) != 17 {
		t.Fatalf("dying replica's unordered claim = %d (%v), want the 17 others", len(more), err)
	}
	_ = rs[0].Close() // the replica is gone; its leases are all that is left of it

	for _, at := range []time.Duration{0, lease / 2, lease} {
		got, err := rs[1].ClaimSinkDeliveries(t.Context(), "hook", false, t0.Add(at), lease, 0)
		if err != nil || len(got) != 0 {
			t.Errorf("survivor claimed %d (%v) at +%s, inside the leases", len(got), err, at)
		}
	}
	after := t0.Add(lease + time.Millisecond)
	heads, err := rs[1].ClaimSinkDeliveries(t.Context(), "hook", true, after, lease, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := storetest.EventIDs(heads); !slices.Equal(got, []string{"e0", "e1", "e2"}) {
		t.Errorf("survivor's ordered claim after the leases = %v, want the heads [e0 e1 e2]", got)
	}
	rest, err := rs[1].ClaimSinkDeliveries(t.Context(), "hook", false, after, lease, 0)
	if err != nil || len(rest) != 17 {
		t.Errorf("survivor's unordered claim after the leases = %d (%v), want 17", len(rest), err)
	}
	for _, d := range append(heads, rest...) {
		if err := rs[1].CompleteSinkDelivery(t.Context(), d.ID); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := rs[1].SinkDepth(t.Context(), "hook"); err != nil || n != 0 {
		t.Errorf("depth = %d, %v; want 0", n, err)
	}
}

// TestReplicasEnqueueOnce: the same events queued at once by two replicas (an inbox row
// replayed on both) are queued once, whatever the order of each batch.
func TestReplicasEnqueueOnce(t *testing.T) {
	rs := replicas(t, 2)
	const n = 120
	atOnce(rs, 4, func(r int, s *Store, rng *rand.Rand) {
		for chunk := range slices.Chunk(rng.Perm(n), 30) {
			var ds []store.SinkDelivery
			for _, i := range chunk {
				ds = append(ds, sinkEvent(fmt.Sprint("e", i), "job"))
			}
			if err := s.EnqueueSinkDeliveries(context.Background(), ds); err != nil {
				t.Errorf("replica %d: enqueue: %v", r, err)
				return
			}
		}
	})
	if d, err := rs[0].SinkDepth(t.Context(), "hook"); err != nil || d != n {
		t.Errorf("depth = %d, %v; want %d", d, err, n)
	}
}
