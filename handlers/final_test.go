package handlers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/internal/testmetrics"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/store"
)

// Once a job's final callback is applied, a later delivery for it changes nothing: one that
// repeats the outcome is a duplicate in effect, any other is quarantined with the reason and
// counted. Each delivery of a case is applied in turn; want is the record's state after all.
func TestDeliveriesAfterFinalChangeNothing(t *testing.T) {
	t.Parallel()
	const metric = "scribehook_deliveries_after_final_total"
	for _, tc := range []struct {
		name      string
		resolver  map[string]api.Job
		first     store.Delivery
		later     store.Delivery
		dup       float64 // counted as duplicate
		late      float64 // counted as late
		reason    string  // quarantine reason; "" when none
		status    api.JobStatus
		errMsg    string
		resultTxt string // the record's first utterance after both
		events    []string
	}{
		{
			name: "error after success", first: jobSuccess("j1", sampleResult("the real result"), ""), later: jobError("j1", 500, "attacker"),
			reason: "job j1 is final (transcription.success applied): a later transcription.error changes nothing",
			status: api.StatusDone, resultTxt: "the real result", events: []string{api.EventJobSucceeded},
		},
		{
			name: "success after error", first: jobError("j2", 422, "bad audio"), later: jobSuccess("j2", sampleResult("forged"), ""),
			reason: "job j2 is final (transcription.error applied): a later transcription.success changes nothing",
			status: api.StatusError, errMsg: "bad audio", events: []string{api.EventJobFailed},
		},
		{
			name:     "the account webhook repeats the callback's success",
			resolver: map[string]api.Job{"j3": serviceJob("j3", api.KindPreRecorded, api.StatusDone)},
			first:    jobSuccess("j3", sampleResult("from the callback"), ""), later: webhook(api.EventTranscriptionSuccess, "j3"),
			dup: 1, status: api.StatusDone, resultTxt: "from the service", events: []string{api.EventJobSucceeded},
		},
		{
			name:     "the callback repeats the resolved webhook's success",
			resolver: map[string]api.Job{"j4": serviceJob("j4", api.KindPreRecorded, api.StatusDone)},
			first:    webhook(api.EventTranscriptionSuccess, "j4"), later: jobSuccess("j4", sampleResult("forged"), ""),
			dup: 1, status: api.StatusDone, resultTxt: "from the service", events: []string{api.EventJobSucceeded},
		},
		{
			name:  "a late account webhook of an earlier step",
			first: jobSuccess("j6", sampleResult("the result"), ""), later: webhook(api.EventTranscriptionCreated, "j6"),
			late: 1, status: api.StatusDone, resultTxt: "the result", events: []string{api.EventJobSucceeded},
		},
		{
			// Without the service's record the webhook does not close the job: the callback still
			// brings the result.
			name:  "an unresolved webhook leaves the job open for its callback",
			first: webhook(api.EventTranscriptionSuccess, "j5"), later: jobSuccess("j5", sampleResult("the result"), ""),
			status: api.StatusDone, resultTxt: "the result", events: []string{api.EventJobSucceeded, api.EventJobSucceeded},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := teststore.SQLite(t)
			reg := prometheus.NewRegistry()
			cfg := handlers.Config{Store: s, Metrics: reg}
			if tc.resolver != nil {
				cfg.Resolver = &fakeResolver{jobs: tc.resolver}
			}
			r := start(t, cfg)
			evs := collectEvents(t, r.p)
			id := tc.first.JobID
			waitStatus(t, s, store.InboxDone, ingest(t, s, r.p, tc.first)...)
			before := getJob(t, s, id)
			waitStatus(t, s, store.InboxDone, ingest(t, s, r.p, tc.later)...)
			// The row is marked done inside the apply's transaction; the count and the events
			// follow its commit, so they are waited for before their values are checked.
			counted := func() float64 {
				return testmetrics.Value(t, reg, metric, "outcome", "quarantined") +
					testmetrics.Value(t, reg, metric, "outcome", "late") +
					testmetrics.Value(t, reg, metric, "outcome", "duplicate")
			}
			wantCounted := tc.dup + tc.late
			if tc.reason != "" {
				wantCounted++
			}
			finalEvents := func() []string {
				var types []string
				for _, typ := range []string{api.EventJobSucceeded, api.EventJobFailed} {
					for range evs.of(id, typ) {
						types = append(types, typ)
					}
				}
				return types
			}
			waitFor(t, func() string {
				return fmt.Sprintf("%v counted after the final one (want %v), final events %v (want %v)",
					counted(), wantCounted, finalEvents(), tc.events)
			}, func() bool { return counted() >= wantCounted && len(finalEvents()) >= len(tc.events) })
			rec := getJob(t, s, id)
			if rec.Job.Status != tc.status || rec.Local.ErrorMessage != tc.errMsg {
				t.Errorf("status %s, error message %q", rec.Job.Status, rec.Local.ErrorMessage)
			}
			if tc.resultTxt != "" && (len(rec.Job.Result) == 0 || apitest.MustResult(&rec.Job).Transcription.Utterances[0].Text != tc.resultTxt) {
				t.Errorf("result %s, want %q", jsonOf(t, rec.Job.Result), tc.resultTxt)
			}
			q, err := s.Quarantined(context.Background(), 10)
			if err != nil {
				t.Fatal(err)
			}
			quarantined := 0.0
			if tc.reason != "" {
				quarantined = 1
				if len(q) != 1 || q[0].Reason != tc.reason || string(q[0].Body) != string(tc.later.Body) || q[0].Route != tc.later.Route {
					t.Fatalf("quarantine %+v, want the later delivery with reason %q", q, tc.reason)
				}
				// Nothing of the record moved, not even its delivery count.
				if jsonOf(t, rec) != jsonOf(t, before) {
					t.Errorf("record changed:\n%s\n%s", jsonOf(t, before), jsonOf(t, rec))
				}
			} else if len(q) != 0 {
				t.Errorf("quarantine %+v, want none", q)
			}
			if got := testmetrics.Value(t, reg, metric, "outcome", "quarantined"); got != quarantined {
				t.Errorf("quarantined counted %v, want %v", got, quarantined)
			}
			if got := testmetrics.Value(t, reg, metric, "outcome", "late"); got != tc.late {
				t.Errorf("late counted %v, want %v", got, tc.late)
			}
			if got := testmetrics.Value(t, reg, metric, "outcome", "duplicate"); got != tc.dup {
				t.Errorf("duplicates counted %v, want %v", got, tc.dup)
			}
			if types := finalEvents(); strings.Join(types, ",") != strings.Join(tc.events, ",") {
				t.Errorf("events %v, want %v", types, tc.events)
			}
		})
	}
}

// A live session's messages stop applying after its own end_session: a later message is
// quarantined, not stored among the session's messages. One of its own messages delivered late
// (created before the end, received within the hour: the service retries and reorders) is
// still stored and forwarded, without changing the record.
func TestLiveMessagesAfterEndSession(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	reg := prometheus.NewRegistry()
	r := start(t, handlers.Config{Store: s, Metrics: reg})
	evs := collectEvents(t, r.p)
	const session = "sess-end"
	var ds []store.Delivery
	for _, m := range []struct {
		n   int
		typ api.MessageType
	}{{0, api.MessageStartSession}, {5, api.MessageEndSession}} {
		ds = append(ds, newLive(session, m.n, m.typ, nil).Delivery)
	}
	waitStatus(t, s, store.InboxDone, ingest(t, s, r.p, ds...)...)
	ended := getJob(t, s, session)
	final := func(n int, text string) live {
		return newLive(session, n, api.MessageTranscript, map[string]any{"is_final": true, "utterance": map[string]any{"text": text}})
	}
	late := final(3, "said before the end") // created 3 ms in, before end_session (5 ms)
	forged := final(7, "forged")            // created after the end
	tooLate := final(4, "a day later")      // created before the end, received a day after it
	tooLate.Delivery.ReceivedAt = baseTime.Add(24 * time.Hour)
	for _, d := range []store.Delivery{late.Delivery, forged.Delivery, tooLate.Delivery} {
		waitStatus(t, s, store.InboxDone, ingest(t, s, r.p, d)...)
	}
	msgs := liveMessages(t, s, session)
	if len(msgs) != 3 || msgs[2].Type != api.MessageTranscript || string(msgs[2].Payload) != string(late.Payload) {
		t.Fatalf("stored %d messages, want start_session, end_session and the late transcript", len(msgs))
	}
	if rec := getJob(t, s, session); jsonOf(t, rec) != jsonOf(t, ended) {
		t.Errorf("the ended session's record changed:\n%s\n%s", jsonOf(t, ended), jsonOf(t, rec))
	}
	if got := evs.wait(t, session, "live.transcript", 1); string(got[0].Data) != string(late.Payload) {
		t.Errorf("event %s, want the late message", got[0].Data)
	}
	q, _ := s.Quarantined(context.Background(), 10)
	want := "session sess-end is final (live.end_session applied): a later live.transcript changes nothing"
	if len(q) != 2 || q[0].Reason != want || q[1].Reason != want || string(q[1].Body) != string(forged.Delivery.Body) ||
		string(q[0].Body) != string(tooLate.Delivery.Body) {
		t.Fatalf("quarantine %+v, want the forged and the day-late messages", q)
	}
	const metric = "scribehook_deliveries_after_final_total"
	if got := testmetrics.Value(t, reg, metric, "outcome", "quarantined"); got != 2 {
		t.Errorf("quarantined counted %v, want 2", got)
	}
	if got := testmetrics.Value(t, reg, metric, "outcome", "late"); got != 1 {
		t.Errorf("late counted %v, want 1", got)
	}
}

// The id applied is the id the receiver classified (and checked the token against), whatever
// another reading of the body would give.
func TestAppliedIDIsTheClassifiedID(t *testing.T) {
	t.Parallel()
	s, r := startOn(t, handlers.Config{})
	d := jobError("mine", 500, "x")
	d.Body = []byte(`{"id":"other","event":"transcription.error","error":{"code":500,"message":"x"}}`)
	waitStatus(t, s, store.InboxDone, ingest(t, s, r.p, d)...)
	if rec := getJob(t, s, "mine"); rec.Job.Status != api.StatusError {
		t.Errorf("mine: %s", rec.Job.Status)
	}
	if _, err := s.GetJob(context.Background(), "other"); err == nil {
		t.Errorf("a record for %q was written", "other")
	}
}
