package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
		s, err := Open(b.Context(), Options{DSN: dsn})
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
	s := open(b, newSchema(b))
	var ids []int64
	for start := 0; start < b.N; start += 256 {
		var ds []store.Delivery
		for i := start; i < min(start+256, b.N); i++ {
			ds = append(ds, liveDelivery(fmt.Sprintf("bench-%d", i), fmt.Sprint("session-", i%16)))
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
