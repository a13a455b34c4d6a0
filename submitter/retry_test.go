package submitter

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
)

const jobJSON = `{"id":"j1","request_id":"G-00000001","version":2,"status":"done","created_at":"2026-11-20T10:00:00.000Z","kind":"pre-recorded","file":null,"request_params":null}`

func TestRetry429HonoursRetryAfterSeconds(t *testing.T) {
	srv := newRecorder(t,
		reply(429, `{"statusCode":429,"message":"too many"}`, "Retry-After", "3"),
		reply(429, `{"statusCode":429,"message":"too many"}`, "Retry-After", "1"),
		reply(200, jobJSON),
	)
	c, s := newTestClient(t, srv.URL)
	job, err := c.GetPreRecorded(context.Background(), "j1")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if job.ID != "j1" || job.Status != api.StatusDone {
		t.Fatalf("job = %+v", job)
	}
	if srv.count() != 3 {
		t.Fatalf("attempts = %d, want 3", srv.count())
	}
	if want := []time.Duration{3 * time.Second, time.Second}; !slices.Equal(s.got(), want) {
		t.Fatalf("sleeps = %v, want %v", s.got(), want)
	}
	for i := range 3 {
		req, _ := srv.request(i)
		if got := req.Header.Get("x-service-key"); got != testKey {
			t.Errorf("attempt %d key header = %q", i, got)
		}
		if got := req.Header.Get("User-Agent"); got != "scribehook/dev" {
			t.Errorf("attempt %d User-Agent = %q", i, got)
		}
		if req.Method != http.MethodGet || req.URL.Path != "/v2/pre-recorded/j1" {
			t.Errorf("attempt %d = %s %s", i, req.Method, req.URL.Path)
		}
	}
}

func TestRetry429HonoursRetryAfterDateAndClamp(t *testing.T) {
	now := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	srv := newRecorder(t,
		reply(429, ``, "Retry-After", now.Add(7*time.Second).Format(http.TimeFormat)),
		reply(429, ``, "Retry-After", now.Add(-time.Minute).Format(http.TimeFormat)), // past: no wait
		reply(429, ``, "Retry-After", "3600"),                                        // clamped to MaxRetryAfter
		reply(200, jobJSON),
	)
	c, s := newTestClient(t, srv.URL,
		WithClock(func() time.Time { return now }),
		WithRetry(RetryPolicy{MaxAttempts: 5, MaxRetryAfter: 45 * time.Second}))
	if _, err := c.GetLive(context.Background(), "j1"); err != nil {
		t.Fatalf("get: %v", err)
	}
	want := []time.Duration{7 * time.Second, 0, 45 * time.Second}
	if !slices.Equal(s.got(), want) {
		t.Fatalf("sleeps = %v, want %v", s.got(), want)
	}
}

func TestRetry5xxBackoffIsExponentialCappedAndBounded(t *testing.T) {
	srv := newRecorder(t, reply(500, `{"statusCode":500,"message":"boom","request_id":"G-deadbeef"}`))
	var limits []time.Duration
	half := func(limit time.Duration) time.Duration { limits = append(limits, limit); return limit / 2 }
	c, s := newTestClient(t, srv.URL,
		WithJitter(half),
		WithRetry(RetryPolicy{MaxAttempts: 5, BaseDelay: 100 * time.Millisecond, MaxDelay: 300 * time.Millisecond}))
	_, err := c.ListPreRecorded(context.Background(), api.ListQuery{})
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 500 || ae.RequestID != "G-deadbeef" {
		t.Fatalf("err = %v, want the last 500 as APIError", err)
	}
	if srv.count() != 5 {
		t.Fatalf("attempts = %d, want 5", srv.count())
	}
	wantLimits := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}
	if !slices.Equal(limits, wantLimits) {
		t.Fatalf("jitter ceilings = %v, want %v", limits, wantLimits)
	}
	wantSleeps := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond, 150 * time.Millisecond}
	if !slices.Equal(s.got(), wantSleeps) {
		t.Fatalf("sleeps = %v, want %v", s.got(), wantSleeps)
	}
}

func TestBackoffCeilingDoublesUpToMaxDelay(t *testing.T) {
	p := RetryPolicy{BaseDelay: 250 * time.Millisecond, MaxDelay: 5 * time.Second}
	for n, want := range map[int]time.Duration{
		1: 250 * time.Millisecond, 2: 500 * time.Millisecond, 3: time.Second, 5: 4 * time.Second,
		6: 5 * time.Second, 37: 5 * time.Second, 64: 5 * time.Second, 1000: 5 * time.Second,
	} {
		if got := p.backoffCeiling(n); got != want {
			t.Errorf("backoffCeiling(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestFullJitterStaysWithinCeiling(t *testing.T) {
	for range 1000 {
		if d := fullJitter(time.Second); d < 0 || d > time.Second {
			t.Fatalf("fullJitter(1s) = %v", d)
		}
	}
	if d := fullJitter(0); d != 0 {
		t.Fatalf("fullJitter(0) = %v", d)
	}
}

func TestCreateIsNotRetriedOnAmbiguousFailures(t *testing.T) {
	for _, status := range []int{500, 502, 504} {
		srv := newRecorder(t, reply(status, `{"statusCode":500,"message":"boom"}`), reply(201, `{"id":"x"}`))
		c, s := newTestClient(t, srv.URL)
		_, err := c.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: "http://a/b.wav"})
		if !IsStatus(err, status) {
			t.Fatalf("status %d: err = %v", status, err)
		}
		if srv.count() != 1 || len(s.got()) != 0 {
			t.Fatalf("status %d: attempts = %d, sleeps = %v; want 1 attempt, no sleep", status, srv.count(), s.got())
		}
	}
}

func TestCreateIsRetriedOn429And503WithSameBody(t *testing.T) {
	srv := newRecorder(t,
		reply(503, `unavailable`, "Content-Type", "text/plain"),
		reply(429, ``, "Retry-After", "2"),
		reply(201, `{"id":"job-9","result_url":"http://h/v2/pre-recorded/job-9"}`),
	)
	c, s := newTestClient(t, srv.URL, WithRetry(RetryPolicy{BaseDelay: time.Second}))
	out, err := c.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: "http://a/b.wav", Diarization: api.Bool(true)})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if out.ID != "job-9" || out.ResultURL != "http://h/v2/pre-recorded/job-9" {
		t.Fatalf("out = %+v", out)
	}
	if want := []time.Duration{time.Second, 2 * time.Second}; !slices.Equal(s.got(), want) {
		t.Fatalf("sleeps = %v, want %v", s.got(), want)
	}
	for i := range 3 {
		req, body := srv.request(i)
		if body != `{"audio_url":"http://a/b.wav","diarization":true}` {
			t.Fatalf("attempt %d body = %s", i, body)
		}
		if req.Header.Get("Content-Type") != "application/json" || req.Method != http.MethodPost || req.URL.Path != "/v2/pre-recorded" {
			t.Fatalf("attempt %d = %s %s %q", i, req.Method, req.URL.Path, req.Header.Get("Content-Type"))
		}
	}
}

// refusedURL is an address where nothing listens: the connection is refused before any byte
// of the request is sent.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func TestConnectionRefusedIsRetriedEvenForCreate(t *testing.T) {
	c, s := newTestClient(t, refusedURL(t), WithRetry(RetryPolicy{MaxAttempts: 3, BaseDelay: time.Second}))
	_, err := c.CreateTranscription(context.Background(), api.PreRecordedRequest{AudioURL: "http://a/b.wav"})
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("err = %v, want ECONNREFUSED", err)
	}
	if want := []time.Duration{time.Second, 2 * time.Second}; !slices.Equal(s.got(), want) {
		t.Fatalf("sleeps = %v, want %v", s.got(), want)
	}
}

// A connection that breaks after the request was sent may have created the job.
func TestCreateIsNotRetriedWhenConnectionDropsAfterSend(t *testing.T) {
	drop := func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}
	srv := newRecorder(t, drop, reply(201, `{"id":"x"}`))
	c, s := newTestClient(t, srv.URL)
	if _, err := c.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: "http://a/b.wav"}); err == nil {
		t.Fatal("create succeeded, want the transport error")
	}
	if srv.count() != 1 || len(s.got()) != 0 {
		t.Fatalf("attempts = %d, sleeps = %v; want 1 attempt", srv.count(), s.got())
	}

	// The same failure on an idempotent GET is retried.
	srv = newRecorder(t, drop, reply(200, jobJSON))
	c, s = newTestClient(t, srv.URL)
	if _, err := c.GetTranscription(context.Background(), "j1"); err != nil {
		t.Fatalf("get: %v", err)
	}
	if srv.count() != 2 || len(s.got()) != 1 {
		t.Fatalf("attempts = %d, sleeps = %v; want 2 attempts", srv.count(), s.got())
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	srv := newRecorder(t, reply(404, `{"statusCode":404,"message":"job not found"}`))
	c, s := newTestClient(t, srv.URL)
	err := c.DeletePreRecorded(context.Background(), "nope")
	if !IsStatus(err, 404) || srv.count() != 1 || len(s.got()) != 0 {
		t.Fatalf("err = %v, attempts = %d, sleeps = %v", err, srv.count(), s.got())
	}
}

func TestContextCancelledDuringBackoff(t *testing.T) {
	srv := newRecorder(t, reply(429, `{"statusCode":429,"message":"slow down"}`, "Retry-After", "30"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var asked time.Duration
	sleeper := func(ctx context.Context, d time.Duration) error {
		asked = d
		go cancel() // the caller gives up while the client waits
		return sleepContext(ctx, d)
	}
	c, _ := newTestClient(t, srv.URL, WithSleeper(sleeper))
	start := time.Now()
	_, err := c.GetPreRecorded(ctx, "j1")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if !IsStatus(err, 429) {
		t.Fatalf("err = %v, want the last 429 kept", err)
	}
	if asked != 30*time.Second || time.Since(start) > 5*time.Second {
		t.Fatalf("asked %v, returned after %v", asked, time.Since(start))
	}
	if srv.count() != 1 {
		t.Fatalf("attempts = %d, want 1", srv.count())
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"12", 12 * time.Second, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{"99999999999999", 24 * time.Hour, true},
	}
	for _, tc := range cases {
		h := http.Header{}
		if tc.v != "" {
			h.Set("Retry-After", tc.v)
		}
		got, ok := retryAfter(h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}

// A zero or negative option field takes its default, a positive one stays; a negative
// Reconnects stays too, since it disables resuming.
func TestOptionDefaults(t *testing.T) {
	if got, want := (RetryPolicy{MaxAttempts: -1, MaxDelay: time.Second}).withDefaults(),
		(RetryPolicy{MaxAttempts: 4, BaseDelay: 500 * time.Millisecond, MaxDelay: time.Second, MaxRetryAfter: time.Minute}); got != want {
		t.Errorf("RetryPolicy defaults = %+v, want %+v", got, want)
	}
	if got, want := (StreamOptions{SampleRate: 8000, Channels: -2, ReadLimit: -1, Reconnects: -1}).withDefaults(),
		(StreamOptions{SampleRate: 8000, BitDepth: 16, Channels: 1, ChunkDuration: 100 * time.Millisecond,
			ReadLimit: 16 << 20, Reconnects: -1, ResumeBuffer: 16 << 20}); got != want {
		t.Errorf("StreamOptions defaults = %+v, want %+v", got, want)
	}
	if got := (StreamOptions{}).withDefaults().Reconnects; got != 5 {
		t.Errorf("zero Reconnects = %d, want 5", got)
	}
}
