package handlers_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/store"
)

const noKeyResolution = "not resolved: no service API key configured; the record holds what the delivery carried"

// serviceJob is a full record as the service returns it.
func serviceJob(id string, kind api.JobKind, status api.JobStatus) api.Job {
	res := sampleResult("from the service")
	code := 0
	j := api.Job{
		ID: id, RequestID: "req-" + id, Version: api.RecordVersion, Status: status,
		CreatedAt: api.NewTime(baseTime.Add(-time.Minute)), Kind: kind,
		CompletedAt:    api.PtrTime(baseTime.Add(-time.Second)),
		CustomMetadata: json.RawMessage(`{"team":"svc"}`),
		File: &api.File{ID: "file-" + id, Filename: "a.wav", Source: "https://example.com/a.wav",
			AudioDuration: 3.5, NumberOfChannels: 1},
		RequestParams: json.RawMessage(`{"audio_url":"https://example.com/a.wav"}`),
		Result:        api.RawResult(&res),
	}
	if status == api.StatusError {
		code = 500
		j.ErrorCode, j.Result = &code, nil
	}
	return j
}

// A job.success callback takes the service's record when it can be read; otherwise the
// callback's content with the reason noted.
func TestJobCallbackResolution(t *testing.T) {
	t.Parallel()
	t.Run("resolved", func(t *testing.T) {
		t.Parallel()
		want := serviceJob("job-r", api.KindPreRecorded, api.StatusDone)
		res := &fakeResolver{jobs: map[string]api.Job{"job-r": want}}
		s, r := startOn(t, handlers.Config{Resolver: res})
		applyAll(t, s, r.p, jobSuccess("job-r", sampleResult("from the callback"), `{"team":"cb"}`))
		rec := getJob(t, s, "job-r")
		checkServiceRecord(t, rec.Job, want)
		if rec.Local.Resolution != "" || rec.Local.Deliveries != 1 || rec.Local.Source != "callback" {
			t.Errorf("local: %+v", rec.Local)
		}
		if !slices.Equal(res.called(), []string{"pre-recorded/job-r"}) {
			t.Errorf("resolver calls %v", res.called())
		}
	})
	t.Run("resolver fails", func(t *testing.T) {
		t.Parallel()
		res := &fakeResolver{err: errors.New("service unavailable (503)")}
		s, r := startOn(t, handlers.Config{Resolver: res})
		result := sampleResult("from the callback")
		applyAll(t, s, r.p, jobSuccess("job-f", result, `{"team":"cb"}`))
		rec := getJob(t, s, "job-f")
		if rec.Local.Resolution != "not resolved: service unavailable (503)" {
			t.Errorf("resolution %q", rec.Local.Resolution)
		}
		checkFromCallback(t, rec, result, `{"team":"cb"}`)
	})
	t.Run("no resolver", func(t *testing.T) {
		t.Parallel()
		s, r := startOn(t, handlers.Config{})
		result := sampleResult("from the callback")
		applyAll(t, s, r.p, jobSuccess("job-n", result, ""))
		rec := getJob(t, s, "job-n")
		if rec.Local.Resolution != noKeyResolution {
			t.Errorf("resolution %q", rec.Local.Resolution)
		}
		checkFromCallback(t, rec, result, "")
	})
	t.Run("job error", func(t *testing.T) {
		t.Parallel()
		s, r := startOn(t, handlers.Config{})
		applyAll(t, s, r.p, jobError("job-e", 422, "audio could not be decoded"))
		rec := getJob(t, s, "job-e")
		if rec.Job.Status != api.StatusError || rec.Job.ErrorCode == nil || *rec.Job.ErrorCode != 422 ||
			len(rec.Job.Result) > 0 || rec.Local.ErrorMessage != "audio could not be decoded" {
			t.Errorf("record %s, local %+v", jsonOf(t, rec.Job), rec.Local)
		}
	})
}

// checkServiceRecord checks that the stored job is the service's record, as the service gave it.
func checkServiceRecord(t *testing.T, stored, service api.Job) {
	t.Helper()
	if got, w := jsonOf(t, stored), jsonOf(t, service); got != w {
		t.Errorf("stored record\n%s\nwant the service's\n%s", got, w)
	}
}

func checkFromCallback(t *testing.T, rec store.JobRecord, result api.Result, customMetadata string) {
	t.Helper()
	j := rec.Job
	if j.ID == "" || j.Kind != api.KindPreRecorded || j.Status != api.StatusDone || j.Version != api.RecordVersion {
		t.Errorf("record %s", jsonOf(t, j))
	}
	if len(j.Result) == 0 || jsonOf(t, j.Result) != jsonOf(t, result) {
		t.Errorf("result %s, want the callback's %s", jsonOf(t, j.Result), jsonOf(t, result))
	}
	if string(j.CustomMetadata) != customMetadata {
		t.Errorf("custom_metadata %s, want %s", j.CustomMetadata, customMetadata)
	}
	if j.CompletedAt == nil || !j.CompletedAt.Equal(baseTime) || !j.CreatedAt.Equal(baseTime) {
		t.Errorf("created %v completed %v, want the receipt time", j.CreatedAt, j.CompletedAt)
	}
	if rec.Local.Deliveries != 1 || !rec.Local.ReceivedAt.Equal(baseTime) {
		t.Errorf("local %+v", rec.Local)
	}
}

// Thin webhooks carry only an id: the record is the service's when it can be read, else what
// the event says, with the reason noted.
func TestThinWebhook(t *testing.T) {
	t.Parallel()
	t.Run("resolved", func(t *testing.T) {
		t.Parallel()
		want := serviceJob("wh-r", api.KindPreRecorded, api.StatusDone)
		res := &fakeResolver{jobs: map[string]api.Job{"wh-r": want}}
		s, r := startOn(t, handlers.Config{Resolver: res})
		evs := collectEvents(t, r.p)
		applyAll(t, s, r.p, webhook(api.EventTranscriptionSuccess, "wh-r"))
		rec := getJob(t, s, "wh-r")
		checkServiceRecord(t, rec.Job, want)
		if rec.Local.Source != "webhook" || rec.Local.Resolution != "" || rec.Local.Deliveries != 1 {
			t.Errorf("local %+v", rec.Local)
		}
		got := evs.wait(t, "wh-r", api.EventJobSucceeded, 1)
		if string(got[0].Data) != jsonOf(t, want) || got[0].Kind != api.KindPreRecorded ||
			string(got[0].CustomMetadata) != `{"team":"svc"}` {
			t.Errorf("event %+v", got[0])
		}
		if !slices.Equal(res.called(), []string{"pre-recorded/wh-r"}) {
			t.Errorf("resolver calls %v", res.called())
		}
	})
	t.Run("live resolved as live", func(t *testing.T) {
		t.Parallel()
		res := &fakeResolver{jobs: map[string]api.Job{"wh-l": serviceJob("wh-l", api.KindLive, api.StatusDone)}}
		s, r := startOn(t, handlers.Config{Resolver: res})
		applyAll(t, s, r.p, webhook(api.EventLiveEndSession, "wh-l"))
		if !slices.Equal(res.called(), []string{"live/wh-l"}) {
			t.Errorf("resolver calls %v", res.called())
		}
		if rec := getJob(t, s, "wh-l"); rec.Job.Kind != api.KindLive || rec.Job.Status != api.StatusDone {
			t.Errorf("record %s", jsonOf(t, rec.Job))
		}
	})
	t.Run("unresolved", func(t *testing.T) {
		t.Parallel()
		s, r := startOn(t, handlers.Config{})
		evs := collectEvents(t, r.p)
		applyAll(t, s, r.p, webhook(api.EventTranscriptionCreated, "wh-n"))
		if rec := getJob(t, s, "wh-n"); rec.Job.Status != api.StatusQueued {
			t.Errorf("after created: %s", rec.Job.Status)
		}
		evs.wait(t, "wh-n", api.EventJobCreated, 1)
		applyAll(t, s, r.p, webhook(api.EventTranscriptionSuccess, "wh-n"))
		rec := getJob(t, s, "wh-n")
		if rec.Job.Status != api.StatusDone || rec.Job.Kind != api.KindPreRecorded || len(rec.Job.Result) > 0 {
			t.Errorf("record %s", jsonOf(t, rec.Job))
		}
		if rec.Local.Source != "webhook" || rec.Local.Resolution != noKeyResolution || rec.Local.Deliveries != 2 {
			t.Errorf("local %+v", rec.Local)
		}
		evs.wait(t, "wh-n", api.EventJobSucceeded, 1)
	})
	t.Run("resolver fails", func(t *testing.T) {
		t.Parallel()
		s, r := startOn(t, handlers.Config{Resolver: &fakeResolver{}})
		applyAll(t, s, r.p, webhook(api.EventTranscriptionError, "wh-e"))
		rec := getJob(t, s, "wh-e")
		if rec.Job.Status != api.StatusError || rec.Local.Resolution != "not resolved: job wh-e: 404 not found" {
			t.Errorf("record %s, local %+v", jsonOf(t, rec.Job), rec.Local)
		}
	})
}

// A job.success row yields one job.succeeded event whose id depends only on the delivery; live
// rows yield live.<type> events carrying the payload as received.
func TestEvents(t *testing.T) {
	t.Parallel()
	job := jobSuccess("ev-job", sampleResult("événement <b>&</b>"), `{"order":7}`)
	var firstID string
	for round := range 2 {
		// A fresh store each round: the same delivery processed again gives the same id.
		s, r := startOn(t, handlers.Config{Partitions: 2})
		evs := collectEvents(t, r.p)
		ids := ingest(t, s, r.p, job)
		r.p.Committed(ids[0], "ev-job") // notified twice: still one event
		// A marker behind the job in its partition: once it is done, the job's events are all
		// out. (It is a late account webhook: the job is final, so it changes nothing.)
		marker := webhook(api.EventTranscriptionCreated, "ev-job")
		waitStatus(t, s, store.InboxDone, ingest(t, s, r.p, marker)...)
		got := evs.wait(t, "ev-job", api.EventJobSucceeded, 1)
		time.Sleep(20 * time.Millisecond) // a duplicate would be out by now; absence cannot be awaited
		if got = evs.of("ev-job", api.EventJobSucceeded); len(got) != 1 {
			t.Fatalf("round %d: %d job.succeeded events, want 1", round, len(got))
		}
		ev := got[0]
		rec := getJob(t, s, "ev-job")
		var data api.Job
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			t.Fatalf("event data: %v", err)
		}
		if jsonOf(t, data) != jsonOf(t, rec.Job) || ev.Kind != api.KindPreRecorded || ev.Category != "" ||
			string(ev.CustomMetadata) != `{"order":7}` || !ev.CreatedAt.Equal(baseTime) {
			t.Errorf("event %+v\nrecord %s", ev, jsonOf(t, rec.Job))
		}
		if round == 0 {
			firstID = ev.ID
		} else if ev.ID != firstID {
			t.Errorf("event id %s on reprocessing, first %s", ev.ID, firstID)
		}
		if created := evs.of("ev-job", api.EventJobCreated); len(created) != 0 {
			t.Errorf("a late transcription.created made %d events", len(created))
		}
	}

	// Live rows: the event carries the category and the payload byte for byte, HTML
	// characters included (whitespace between tokens is not kept by any JSON envelope).
	s, r := startOn(t, handlers.Config{})
	evs := collectEvents(t, r.p)
	ls := []live{
		newLive("ev-live", 0, api.MessageStartSession, nil),
		rawLive("ev-live", 1, []byte(`{"session_id":"ev-live","created_at":"2026-03-01T12:00:00.001Z",`+
			`"type":"transcript","data":{"id":"u1","is_final":true,"utterance":{"text":"Tom & Jerry <3 > all","words":[]}},"vendor_field":[1,2]}`)),
		variedLive("ev-live", 7), // a failed acknowledgment: errors
		rawLive("ev-live", 3, []byte("{\n  \"session_id\": \"ev-live\",\n  \"created_at\": \"2026-03-01T12:00:00.003Z\",\n  \"type\": \"speech_start\",\n  \"data\": {\"time\": 1.5, \"channel\": 0}\n}")),
	}
	var ds []store.Delivery
	for _, l := range ls {
		ds = append(ds, l.Delivery)
	}
	ingest(t, s, r.p, ds...)
	for i, l := range ls {
		got := evs.wait(t, "ev-live", api.LiveEvent(l.Type), 1)
		if len(got) != 1 {
			t.Fatalf("%d %s events", len(got), l.Type)
		}
		ev := got[0]
		want := l.Payload
		if i == 3 {
			var buf bytes.Buffer
			must(json.Compact(&buf, want))
			want = buf.Bytes()
		}
		if ev.Category != l.Category || ev.Kind != api.KindLive || !bytes.Equal(ev.Data, want) {
			t.Errorf("%s event: category %s kind %s data\n%s\nwant %s data\n%s", l.Type, ev.Category, ev.Kind, ev.Data, l.Category, want)
		}
	}
	// The stored message itself is the payload exactly as received, whitespace included.
	if ms := liveMessages(t, s, "ev-live"); len(ms) != 4 || !bytes.Equal(ms[3].Payload, ls[3].Payload) || !bytes.Equal(ms[1].Payload, ls[1].Payload) {
		t.Errorf("stored payloads %+v", ms)
	}
}
