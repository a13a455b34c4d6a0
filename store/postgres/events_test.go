package postgres

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// TestEventPrunedWhileQueuedAgain: one replica prunes the last delivery of an event while
// another queues the same event for another sink. Without a foreign key, the locks alone keep
// every delivery's event there: the queueing either finds the event and keeps it, or fails
// because the pruner deleted it first (and its retry stores it again). Never a delivery
// referring to nothing.
func TestEventPrunedWhileQueuedAgain(t *testing.T) {
	rs := replicas(t, 2)
	ctx := t.Context()
	policy := store.RetentionPolicy{SinkDelivered: time.Hour}
	const rounds = 40
	var failed int
	for i := range rounds {
		ev := api.Event{ID: fmt.Sprint("ev-", i), Type: "live.transcript", JobID: "j", Kind: api.KindLive,
			Data: []byte(`{"n":` + fmt.Sprint(i) + `}`)}
		if err := rs[0].EnqueueSinkDeliveries(ctx, []store.SinkDelivery{{Sink: "first", Event: ev}}); err != nil {
			t.Fatal(err)
		}
		ds, err := rs[0].ClaimSinkDeliveries(ctx, "first", false, time.Now(), time.Minute, 0)
		if err != nil || len(ds) != 1 {
			t.Fatalf("claim: %v, %v", ds, err)
		}
		if err := rs[0].CompleteSinkDelivery(ctx, ds[0].ID); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var qerr error
		wg.Go(func() {
			if _, err := rs[0].Prune(ctx, policy, time.Now().Add(2*time.Hour), false); err != nil {
				t.Errorf("prune: %v", err)
			}
		})
		wg.Go(func() {
			qerr = rs[1].EnqueueSinkDeliveries(ctx, []store.SinkDelivery{{Sink: fmt.Sprint("second-", i), Event: ev}})
		})
		wg.Wait()
		if qerr != nil {
			if !strings.Contains(qerr.Error(), "deleted while it was queued") {
				t.Fatalf("enqueue: %v", qerr)
			}
			failed++
			// As the Apply's retry would: the event is stored again.
			if err := rs[1].EnqueueSinkDeliveries(ctx, []store.SinkDelivery{{Sink: fmt.Sprint("second-", i), Event: ev}}); err != nil {
				t.Fatalf("enqueue again: %v", err)
			}
		}
		got, err := rs[1].ClaimSinkDeliveries(ctx, fmt.Sprint("second-", i), false, time.Now(), time.Minute, 0)
		if err != nil || len(got) != 1 || string(got[0].Event.Data) != string(ev.Data) {
			t.Fatalf("round %d: claim of the second sink: %+v, %v", i, got, err)
		}
	}
	var dangling int
	if err := rs[0].db.QueryRowContext(ctx, `SELECT count(*) FROM sink_deliveries d
		WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.id = d.event)`).Scan(&dangling); err != nil || dangling != 0 {
		t.Errorf("deliveries referring to no event: %d, %v", dangling, err)
	}
	t.Logf("%d of %d enqueues met the event deleted", failed, rounds)
}
