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
