package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// BenchmarkIngestReplicas measures group-committed ingestion as serve does it (one
// store.Batcher per replica, many concurrent requests), with one and with two replicas on the
// same database. Each request is one new delivery of about 300 bytes; the figure that matters
// is deliveries/s. docs/scaling.md quotes it.
//
//	eval "$(PG_FSYNC=on scripts/pg.sh start)"
//	go test -run '^$' -bench IngestReplicas -benchtime 5000x ./store/postgres/
func BenchmarkIngestReplicas(b *testing.B) {
	for _, replicas := range []int{1, 2} {
		for _, clients := range []int{1, 16, 64} {
			if clients < replicas {
				continue // one client keeps one replica busy: the same as one replica
			}
			b.Run(fmt.Sprintf("replicas=%d/clients=%d", replicas, clients), func(b *testing.B) {
				benchIngest(b, replicas, clients)
			})
		}
	}
}

func benchIngest(b *testing.B, replicas, clients int) {
	dsn := newSchema(b)
	var batchers []*store.Batcher
	for range replicas {
		s, err := Open(b.Context(), Config{DSN: dsn})
		if err != nil {
			b.Fatal(err)
		}
		bt := store.NewBatcher(s, store.BatcherOptions{})
		b.Cleanup(func() { bt.Close(); _ = s.Close() })
		batchers = append(batchers, bt)
	}
	body := make([]byte, 300)
	for i := range body {
		body[i] = 'x'
	}
	var next atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		bt := batchers[c%replicas] // the load balancer spreads requests evenly
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				d := liveDelivery(fmt.Sprintf("bench-%d", i), fmt.Sprint("session-", i%50))
				d.Body = body
				if _, err := bt.Submit(context.Background(), d); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "deliveries/s")
}

// BenchmarkApplyGroup: one op is one inbox row applied in a group of 64 (ApplyGroup, as the
// pipeline applies a partition's queued rows), its live message appended: the round trips a
// group makes to mark its rows done and append, with the transaction's commit.
//
//	eval "$(scripts/pg.sh start)"
//	go test -run '^$' -bench ApplyGroup -benchtime 20000x ./store/postgres/
func BenchmarkApplyGroup(b *testing.B) {
	for _, byRef := range []bool{false, true} {
		b.Run(map[bool]string{false: "copy", true: "reference"}[byRef], func(b *testing.B) { benchApplyGroup(b, byRef) })
	}
}

// benchApplyGroup appends each group's messages as copies row by row (AppendLiveMessage, the
// rows of earlier versions) or by reference to their located messages in one statement
// (AppendReceivedMessages).
func benchApplyGroup(b *testing.B, byRef bool) {
	s := open(b, newSchema(b))
	var ids []int64
	for start := 0; start < b.N; start += 256 {
		var ds []store.Delivery
		for i := start; i < min(start+256, b.N); i++ {
			d := liveDelivery(fmt.Sprintf("bench-%d", i), fmt.Sprint("session-", i%16))
			d.Message, d.MessageAt = store.Span{Len: len(d.Body)}, d.ReceivedAt
			ds = append(ds, d)
		}
		res, err := s.Ingest(b.Context(), ds)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			ids = append(ids, r.ID)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for start := 0; start < len(ids); start += 64 {
		group := ids[start:min(start+64, len(ids))]
		if err := s.ApplyGroup(b.Context(), group, func(ctx context.Context, tx store.Tx, marked []int64) error {
			if byRef {
				return tx.AppendReceivedMessages(ctx, marked)
			}
			for _, id := range marked {
				if _, err := tx.AppendLiveMessage(ctx, store.LiveMessage{SessionID: fmt.Sprint("session-", id%16),
					InboxID: id, Payload: []byte(`{"type":"transcript"}`)}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkSinkQueue: one op is one event queued for one sink or for three (64 events per
// EnqueueSinkDeliveries, as a group apply queues them), then, untimed, every delivery claimed
// and completed 512 at a time, as a dispatcher round does (cycle-µs/delivery). queued-B/event
// is what the queue's tables and their indexes grew by (pg_total_relation_size), per event.
//
//	eval "$(scripts/pg.sh start)"
//	go test -run '^$' -bench SinkQueue -benchtime 20000x ./store/postgres/
func BenchmarkSinkQueue(b *testing.B) {
	for _, sinks := range []int{1, 3} {
		b.Run(fmt.Sprintf("sinks=%d", sinks), func(b *testing.B) { benchSinkQueue(b, sinks) })
	}
}

func benchSinkQueue(b *testing.B, sinks int) {
	s := open(b, newSchema(b))
	ctx := b.Context()
	size := func() int64 {
		var n int64
		if err := s.db.QueryRowContext(ctx, `SELECT coalesce(pg_total_relation_size(to_regclass('sink_deliveries')), 0)
			+ coalesce(pg_total_relation_size(to_regclass('events')), 0)`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	}
	payload := json.RawMessage(`{"type":"transcript","session_id":"session-00","created_at":"2026-11-22T01:39:00.000Z","data":{"id":"u-1","is_final":true,"utterance":{"text":"the quick brown fox jumps over the lazy dog and keeps running","start":1.5,"end":4.25,"language":"en","channel":0,"words":[]}}}`)
	before := size()
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for start := 0; start < b.N; start += 64 {
		var ds []store.SinkDelivery
		for i := start; i < min(start+64, b.N); i++ {
			session := fmt.Sprint("session-", i%16)
			ev := api.Event{
				ID: uuid.NewSHA1(uuid.NameSpaceOID, []byte(fmt.Sprint(i))).String(), Type: "live.transcript",
				CreatedAt: api.NewTime(now), JobID: session, Kind: api.KindLive, Category: api.CategoryFinalTranscripts,
				Data: payload,
			}
			for k := range sinks {
				ds = append(ds, store.SinkDelivery{Sink: fmt.Sprint("sink-", k), EventID: ev.ID, Event: ev,
					OrderKey: session, CreatedAt: now})
			}
		}
		if err := s.EnqueueSinkDeliveries(ctx, ds); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	queued := size()
	start := time.Now()
	for k := range sinks {
		for {
			ds, err := s.ClaimSinkDeliveries(ctx, fmt.Sprint("sink-", k), false, time.Now(), time.Minute, 512)
			if err != nil {
				b.Fatal(err)
			}
			if len(ds) == 0 {
				break
			}
			ids := make([]int64, len(ds))
			for i := range ds {
				ids[i] = ds[i].ID
			}
			if err := s.CompleteSinkDeliveries(ctx, ids); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N*sinks), "cycle-µs/delivery")
	b.ReportMetric(float64(queued-before)/float64(b.N), "queued-B/event")
}
