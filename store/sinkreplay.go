package store

import (
	"context"
	"time"

	"github.com/scribehook/scribehook/api"
)

// SinkReplay queues a window of stored events again for one sink (a replay after a target was
// fixed) or for the first time (a backfill of a sink added later), and lists a sink's
// deliveries. It is a role of its own, outside Store, like SinkQueues; the SQLite and
// PostgreSQL stores implement it.
type SinkReplay interface {
	// ReplaySink queues for r.Sink, under their original event ids, the stored events first
	// queued (for any sink) within [r.Since, r.Until) that r.Match takes: a delivered or dead
	// delivery of the sink goes back to queued (attempts reset, due at r.Now, its last error
	// kept), a queued one is left as it is, and an event the sink has no delivery of is queued
	// for it when r.Backfill takes it (nil: none). A dry run reports the same and writes nothing.
	ReplaySink(ctx context.Context, r SinkReplayRequest) (SinkReplayResult, error)
	// SinkHistory lists a sink's deliveries newest first (by id), without their events' data.
	SinkHistory(ctx context.Context, q SinkHistoryQuery) ([]SinkHistoryItem, error)
}

// SinkReplayRequest is the window and the sink of a ReplaySink.
type SinkReplayRequest struct {
	Sink string
	// Since and Until bound the window on the time each event was first queued (the earliest
	// created_at of its deliveries, whatever the sink): Since included, Until excluded; a zero
	// Until is no bound.
	Since, Until time.Time
	// Match, when set, must take an event for it to be queued again or backfilled (the
	// replay's --type patterns).
	Match func(*api.Event) bool
	// Backfill, when set, takes the events the sink has no delivery of that it would have
	// been sent (its filter): they are queued for it. Nil queues none.
	Backfill func(*api.Event) bool
	// Now is when the queued deliveries are due (zero: the store's clock).
	Now    time.Time
	DryRun bool
}

// SinkReplayResult lists the event ids a ReplaySink queued, by what it did, each in queue
// order.
type SinkReplayResult struct {
	// Requeued were delivered or dead and are queued again.
	Requeued []string
	// Backfilled had no delivery for the sink and are queued for it.
	Backfilled []string
	// AlreadyQueued were queued (waiting or in an attempt) and are left as they were.
	AlreadyQueued []string
	// Skipped counts the events of the window that Match or Backfill did not take.
	Skipped int
}

// SinkHistoryQuery selects a page of a sink's deliveries.
type SinkHistoryQuery struct {
	Sink string
	// Status is "", or one of queued, delivered, dead.
	Status string
	// Since keeps deliveries created at or after it (zero: all).
	Since time.Time
	// Before keeps deliveries with an id below it (zero: from the newest): the next page's
	// cursor is the last item's ID.
	Before int64
	// Limit bounds the page (zero or less: 50).
	Limit int
}

// SinkHistoryItem is one delivery of a sink, without its event's data.
type SinkHistoryItem struct {
	ID        int64
	Sink      string
	EventID   string
	EventType string
	JobID     string // the order key: the job or session id
	Status    string
	Attempts  int
	LastError string
	CreatedAt time.Time
	// DeliveredAt is set on a delivered delivery, FailedAt on a dead one.
	DeliveredAt, FailedAt time.Time
}
