package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/benchcpu"
	"github.com/scribehook/scribehook/store"
)

// The store's write path as the pipeline drives it, one row or one delivery at a time, on a
// temp-file database, with the default synchronous setting (full: derived transactions commit
// with NORMAL) and with normal everywhere (no fsync at commit: the CPU cost alone):
//
//	go test ./store/sqlite -run '^$' -bench 'Apply|SinkCycle' -benchtime 5000x -count 5
//	go test ./store/sqlite -run '^$' -bench 'ApplyLive/sync=normal' -benchtime 5000x -cpuprofile cpu.out

// benchPayload is a live transcript message like the sandbox sends (about 300 bytes).
var benchPayload = json.RawMessage(`{"type":"transcript","session_id":"session-00","created_at":"2026-11-22T01:39:00.000Z","data":{"id":"u-1","is_final":true,"utterance":{"text":"the quick brown fox jumps over the lazy dog and keeps running","start":1.5,"end":4.25,"language":"en","channel":0,"words":[]}}}`)

// openBench opens a store in b's temp directory and ingests n live deliveries over 16
// sessions, returning their inbox ids.
func openBench(b *testing.B, sync string, n int) (*Store, []int64) {
	return openDeliveries(b, sync, n, 16, false)
}

// openLocated is openBench with each message located in its body (the whole body here), as
// the receiver locates it, over sessions sessions.
func openLocated(b *testing.B, n, sessions int) (*Store, []int64) {
	return openDeliveries(b, SynchronousFull, n, sessions, true)
}

func openDeliveries(b *testing.B, sync string, n, sessions int, located bool) (*Store, []int64) {
	b.Helper()
	s, err := Open(b.Context(), Config{Path: filepath.Join(b.TempDir(), "bench.db"), Synchronous: sync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	ids := make([]int64, 0, n)
	for start := 0; start < n; start += 256 {
		var ds []store.Delivery
		for i := start; i < min(start+256, n); i++ {
			session := "session-" + strconv.Itoa(i%sessions)
			d := store.Delivery{
				DedupeKey: "bench-" + strconv.Itoa(i), Route: "job", Kind: api.CallbackLiveMessage,
				Event: "live.transcript", JobID: session, MessageType: api.MessageTranscript,
				Category: api.CategoryFinalTranscripts, PartitionKey: session,
				Body: benchPayload, ReceivedAt: time.Now(),
			}
			if located {
				d.Message, d.MessageAt = store.Span{Len: len(benchPayload)}, d.ReceivedAt
			}
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
	return s, ids
}

// cancellable is a context that can end, like the pipeline's (a message's context): drivers
// and database/sql do more work for those than for context.Background.
func cancellable(b *testing.B) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	return ctx
}

// applyLive is what the pipeline's Apply of one live message does: append the message, read
// and rewrite the session's record, queue one event for each of two sinks.
func applyLive(ctx context.Context, s *Store, row store.InboxRow) error {
	return s.Apply(ctx, row.ID, func(ctx context.Context, tx store.Tx) error {
		now := time.Now()
		if _, err := tx.AppendLiveMessage(ctx, benchMessage(&row, now)); err != nil {
			return err
		}
		rec, err := sessionRecord(ctx, tx, &row, now)
		if err != nil {
			return err
		}
		rec.Local.Deliveries++
		rec.Local.UpdatedAt = now
		if err := tx.PutJob(ctx, rec); err != nil {
			return err
		}
		return tx.EnqueueSinkDeliveries(ctx, benchDeliveries(&row, now))
	})
}

// benchMessage is the live message of row.
func benchMessage(row *store.InboxRow, now time.Time) store.LiveMessage {
	return store.LiveMessage{
		SessionID: row.JobID, Type: row.MessageType, Category: row.Category, CreatedAt: now,
		ReceivedAt: row.ReceivedAt, InboxID: row.ID, Payload: benchPayload,
	}
}

// sessionRecord reads the record of row's session, or makes it.
func sessionRecord(ctx context.Context, tx store.Tx, row *store.InboxRow, now time.Time) (store.JobRecord, error) {
	rec, err := tx.Job(ctx, row.JobID)
	if errors.Is(err, store.ErrNotFound) {
		return store.JobRecord{
			Job:   api.Job{ID: row.JobID, Kind: api.KindLive, Status: api.StatusProcessing, CreatedAt: api.NewTime(now)},
			Local: store.Local{Source: "callback", ReceivedAt: row.ReceivedAt},
		}, nil
	}
	return rec, err
}

// benchDeliveries queues row's event for two sinks.
func benchDeliveries(row *store.InboxRow, now time.Time) []store.SinkDelivery {
	ev := api.Event{
		ID: "ev-" + strconv.FormatInt(row.ID, 10), Type: "live.transcript", CreatedAt: api.NewTime(now),
		JobID: row.JobID, Kind: api.KindLive, Category: row.Category, Data: benchPayload,
	}
	return []store.SinkDelivery{
		{Sink: "files", EventID: ev.ID, Event: ev, OrderKey: row.JobID, CreatedAt: now},
		{Sink: "hook", EventID: ev.ID, Event: ev, OrderKey: row.JobID, CreatedAt: now},
	}
}

// BenchmarkApplyLive: one op is the Apply of one live message (append, session record read
// and rewritten, two sink deliveries queued), committed.
func BenchmarkApplyLive(b *testing.B) {
	for _, sync := range []string{SynchronousFull, SynchronousNormal} {
		b.Run("sync="+sync, func(b *testing.B) { benchApplyLive(b, sync) })
	}
}

func benchApplyLive(b *testing.B, sync string) {
	s, ids := openBench(b, sync, b.N)
	rows := make([]store.InboxRow, len(ids))
	for i, id := range ids {
		r, err := s.InboxRow(b.Context(), id)
		if err != nil {
			b.Fatal(err)
		}
		rows[i] = r
	}
	ctx := cancellable(b)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start(b)
	for i := range b.N {
		if err := applyLive(ctx, s, rows[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu.Report()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkSinkCycle: one op is one delivery claimed (alone, as a sink worker with a batch of
// one does) and completed, on an ordered sink whose queue holds b.N deliveries.
func BenchmarkSinkCycle(b *testing.B) {
	for _, sync := range []string{SynchronousFull, SynchronousNormal} {
		for _, batch := range []int{1, 16} {
			b.Run(fmt.Sprintf("sync=%s/claim=%d", sync, batch), func(b *testing.B) { benchSinkCycle(b, sync, batch) })
		}
	}
}

func benchSinkCycle(b *testing.B, sync string, batch int) {
	s, ids := openBench(b, sync, b.N)
	ctx := cancellable(b)
	for i, id := range ids {
		row := store.InboxRow{ID: id, Delivery: store.Delivery{
			JobID: "session-" + strconv.Itoa(i%16), MessageType: api.MessageTranscript,
			Category: api.CategoryFinalTranscripts, ReceivedAt: time.Now()}}
		if err := applyLive(ctx, s, row); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start(b)
	for done := 0; done < b.N; {
		ds, err := s.ClaimSinkDeliveries(ctx, "hook", true, time.Now(), time.Minute, batch)
		if err != nil {
			b.Fatal(err)
		}
		if len(ds) == 0 {
			b.Fatalf("nothing to claim after %d of %d", done, b.N)
		}
		for _, d := range ds {
			if err := s.CompleteSinkDelivery(ctx, d.ID); err != nil {
				b.Fatal(err)
			}
		}
		done += len(ds)
	}
	b.StopTimer()
	cpu.Report()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
}

// BenchmarkApplyGroupLive: one op is one live message applied as the pipeline applies a
// partition's queued rows (groups of 64 over 16 sessions, one transaction per group): the
// message appended, each session's record read and rewritten once per group, two sink
// deliveries per message queued in one call per group.
//
//	go test ./store/sqlite -run '^$' -bench 'ApplyGroupLive' -benchtime 20000x -cpuprofile cpu.out
func BenchmarkApplyGroupLive(b *testing.B) {
	for _, sync := range []string{SynchronousFull, SynchronousNormal} {
		b.Run("sync="+sync, func(b *testing.B) { benchApplyGroupLive(b, sync, 64) })
	}
}

func benchApplyGroupLive(b *testing.B, sync string, size int) {
	s, ids := openBench(b, sync, b.N)
	rows, err := s.InboxRows(b.Context(), ids)
	if err != nil {
		b.Fatal(err)
	}
	ctx := cancellable(b)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start(b)
	for start := 0; start < len(rows); start += size {
		if err := applyLiveGroup(ctx, s, rows[start:min(start+size, len(rows))]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu.Report()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// applyLiveGroup is applyLive for a group of rows in one ApplyGroup: each record read and
// written once, the sink deliveries queued together.
func applyLiveGroup(ctx context.Context, s *Store, rows []store.InboxRow) error {
	ids := make([]int64, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID
	}
	return s.ApplyGroup(ctx, ids, func(ctx context.Context, tx store.Tx, marked []int64) error {
		now := time.Now()
		recs := map[string]*store.JobRecord{}
		var order []string
		var queued []store.SinkDelivery
		for i := range rows {
			row := &rows[i]
			if _, err := tx.AppendLiveMessage(ctx, benchMessage(row, now)); err != nil {
				return err
			}
			rec := recs[row.JobID]
			if rec == nil {
				r, err := sessionRecord(ctx, tx, row, now)
				if err != nil {
					return err
				}
				rec = &r
				recs[row.JobID] = rec
				order = append(order, row.JobID)
			}
			rec.Local.Deliveries++
			rec.Local.UpdatedAt = now
			queued = append(queued, benchDeliveries(row, now)...)
		}
		for _, id := range order {
			if err := tx.PutJob(ctx, *recs[id]); err != nil {
				return err
			}
		}
		return tx.EnqueueSinkDeliveries(ctx, queued)
	})
}

// BenchmarkAppendLiveGroup: one op is one live message of 64 sessions appended in groups of
// 128 rows (one transaction each, marks included), as a copy of its payload row by row
// (AppendLiveMessage, what rows of earlier versions take) or by reference to its inbox row,
// the whole group in one statement (AppendReceivedMessages).
//
//	go test ./store/sqlite -run '^$' -bench 'AppendLiveGroup' -benchtime 20000x
func BenchmarkAppendLiveGroup(b *testing.B) {
	for _, byRef := range []bool{false, true} {
		name := map[bool]string{false: "copy", true: "reference"}[byRef]
		b.Run(name, func(b *testing.B) {
			s, ids := openLocated(b, b.N, 64)
			rows, err := s.InboxRows(b.Context(), ids)
			if err != nil {
				b.Fatal(err)
			}
			ctx := cancellable(b)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := benchcpu.Start(b)
			for start := 0; start < len(rows); start += 128 {
				group := rows[start:min(start+128, len(rows))]
				err := s.ApplyGroup(ctx, ids[start:start+len(group)], func(ctx context.Context, tx store.Tx, marked []int64) error {
					if byRef {
						return tx.AppendReceivedMessages(ctx, marked)
					}
					now := time.Now()
					for i := range group {
						if _, err := tx.AppendLiveMessage(ctx, benchMessage(&group[i], now)); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu.Report()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkSinkQueueBytes: what the sink queue holds on disk per event, queued for one sink
// and for three, then once every delivery is delivered: the pages in use (page_count less the
// free list, after a checkpoint) grown by the b.N events, per event. Events are live
// transcripts like benchDeliveries' (about 450 bytes of JSON), with UUID ids as the pipeline
// makes them, queued 64 at a time. Run with a fixed count, the figure does not depend on time:
//
//	go test ./store/sqlite -run '^$' -bench SinkQueueBytes -benchtime 20000x
func BenchmarkSinkQueueBytes(b *testing.B) {
	for _, sinks := range []int{1, 3} {
		b.Run(fmt.Sprintf("sinks=%d", sinks), func(b *testing.B) { benchSinkQueueBytes(b, sinks) })
	}
}

func benchSinkQueueBytes(b *testing.B, sinks int) {
	s, err := Open(b.Context(), Config{Path: filepath.Join(b.TempDir(), "bench.db"), Synchronous: SynchronousNormal})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	ctx := b.Context()
	used := func() int64 {
		var size, pages, free int64
		if err := s.withWriter(ctx, func(c *sql.Conn) error {
			if _, err := c.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
				return err
			}
			for q, v := range map[string]*int64{`PRAGMA page_size`: &size, `PRAGMA page_count`: &pages, `PRAGMA freelist_count`: &free} {
				if err := c.QueryRowContext(ctx, q).Scan(v); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		return (pages - free) * size
	}
	before := used()
	now := time.Now()
	b.ResetTimer()
	for start := 0; start < b.N; start += 64 {
		var ds []store.SinkDelivery
		for i := start; i < min(start+64, b.N); i++ {
			session := "session-" + strconv.Itoa(i%16)
			ev := api.Event{
				ID: uuid.NewSHA1(uuid.NameSpaceOID, []byte(strconv.Itoa(i))).String(), Type: "live.transcript",
				CreatedAt: api.NewTime(now), JobID: session, Kind: api.KindLive, Category: api.CategoryFinalTranscripts,
				Data: benchPayload,
			}
			for k := range sinks {
				ds = append(ds, store.SinkDelivery{Sink: "sink-" + strconv.Itoa(k), EventID: ev.ID, Event: ev,
					OrderKey: session, CreatedAt: now})
			}
		}
		if err := s.EnqueueSinkDeliveries(ctx, ds); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	queued := used()
	for k := range sinks {
		for {
			ds, err := s.ClaimSinkDeliveries(ctx, "sink-"+strconv.Itoa(k), false, time.Now(), time.Minute, 512)
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
	delivered := used()
	b.ReportMetric(float64(queued-before)/float64(b.N), "queued-B/event")
	b.ReportMetric(float64(delivered-before)/float64(b.N), "delivered-B/event")
}
