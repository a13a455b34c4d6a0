package receiver

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

type sseEvent struct {
	id, event, data string
}

// sseClient reads one event stream in the background.
type sseClient struct {
	events   chan sseEvent
	comments chan string
	status   int
	cancel   context.CancelFunc
}

func (h *harness) openStream(path string, header map[string]string) *sseClient {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.base+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testReadToken)
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		h.t.Fatalf("open stream: %v", err)
	}
	c := &sseClient{events: make(chan sseEvent, 100), comments: make(chan string, 100), status: resp.StatusCode, cancel: cancel}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode == 200 && !strings.HasPrefix(ct, "text/event-stream") {
		h.t.Errorf("content type %q", ct)
	}
	go func() {
		defer resp.Body.Close()
		defer close(c.events)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev != (sseEvent{}) {
					c.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				select {
				case c.comments <- strings.TrimSpace(line[1:]):
				default:
				}
			default:
				k, v, _ := strings.Cut(line, ":")
				v = strings.TrimPrefix(v, " ")
				switch k {
				case "id":
					ev.id = v
				case "event":
					ev.event = v
				case "data":
					ev.data += v
				}
			}
		}
	}()
	h.t.Cleanup(cancel)
	return c
}

// next waits for the next event; ok is false when the stream ended.
func (c *sseClient) next(t *testing.T) (sseEvent, bool) {
	t.Helper()
	select {
	case ev, ok := <-c.events:
		return ev, ok
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5 s")
		return sseEvent{}, false
	}
}

// must waits for the next event and fails the test when the stream ended.
func (c *sseClient) must(t *testing.T) sseEvent {
	t.Helper()
	ev, ok := c.next(t)
	if !ok {
		t.Fatal("stream ended")
	}
	return ev
}

// quiet checks that no event arrives for a while.
func (c *sseClient) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-c.events:
		if ok {
			t.Errorf("unexpected event %+v", ev)
		} else {
			t.Error("stream ended")
		}
	case <-time.After(d):
	}
}

// summary is "id event category" of an event, checking that data agrees with id and event.
func summary(t *testing.T, ev sseEvent) string {
	t.Helper()
	var v struct {
		Seq       json.Number     `json:"seq"`
		Type      string          `json:"type"`
		Category  string          `json:"category"`
		CreatedAt string          `json:"created_at"`
		Payload   json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal([]byte(ev.data), &v); err != nil {
		t.Fatalf("data %q: %v", ev.data, err)
	}
	if v.Seq.String() != ev.id || v.Type != ev.event || v.CreatedAt == "" || len(v.Payload) == 0 {
		t.Errorf("event %+v disagrees with its data", ev)
	}
	return ev.id + " " + ev.event + " " + v.Category
}

func (h *harness) waitSubscribers(session string, n int) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for h.feed.subscribers(session) != n {
		if time.Now().After(deadline) {
			h.t.Fatalf("%d subscribers of %s, want %d", h.feed.subscribers(session), session, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestEventStream(t *testing.T) {
	// A write timeout far shorter than the test: the stream must outlive it.
	h := newHarness(t, withReceiver(func(r *Receiver) {
		r.writeTimeout = 300 * time.Millisecond
		r.heartbeat = 100 * time.Millisecond
	}))
	storeLive(t, h, sessionID,
		map[string]any{"type": "start_session"},
		transcript("u1", false, "hel"),
		transcript("u1", true, "hello"),
	)
	all := h.openStream("/v1/live/"+sessionID+"/events", nil)
	if all.status != 200 {
		t.Fatalf("status %d", all.status)
	}
	for _, want := range []string{
		"1 start_session lifecycle_events",
		"2 transcript partial_transcripts",
		"3 transcript final_transcripts",
	} {
		ev := all.must(t)
		if got := summary(t, ev); got != want {
			t.Errorf("event %s, want %s", got, want)
		}
	}
	finals := h.openStream("/v1/live/"+sessionID+"/events?category=final_transcripts,realtime_processing_events", nil)
	if ev := finals.must(t); summary(t, ev) != "3 transcript final_transcripts" {
		t.Errorf("filtered: %+v", ev)
	}
	resumed := h.openStream("/v1/live/"+sessionID+"/events", map[string]string{"Last-Event-ID": "2"})
	if ev := resumed.must(t); summary(t, ev) != "3 transcript final_transcripts" {
		t.Errorf("resumed: %+v", ev)
	}
	h.waitSubscribers(sessionID, 3)

	// Longer than the write timeout, with only heartbeats flowing.
	all.quiet(t, time.Second)
	select {
	case c := <-all.comments:
		if c != "stream open" && c != "heartbeat" {
			t.Errorf("comment %q", c)
		}
	default:
		t.Error("no heartbeat comment")
	}

	// A message appended later arrives once the feed pings. The failed translation is stored
	// in errors; it is also a realtime processing event, so the filtered stream gets it.
	storeLive(t, h, sessionID,
		map[string]any{"type": "translation", "error": map[string]any{"message": "no model"}},
		map[string]any{"type": "speech_start", "data": map[string]any{"time": 1.5, "channel": 0}},
	)
	h.feed.ping(sessionID)
	for _, want := range []string{"4 translation errors", "5 speech_start speech_events"} {
		if ev := all.must(t); summary(t, ev) != want {
			t.Errorf("later event %s, want %s", summary(t, ev), want)
		}
	}
	if ev := finals.must(t); summary(t, ev) != "4 translation errors" {
		t.Errorf("filtered later event %+v", ev)
	}
	finals.quiet(t, 200*time.Millisecond)
	if ev := resumed.must(t); summary(t, ev) != "4 translation errors" {
		t.Errorf("resumed later event %+v", ev)
	}

	// A client that leaves gives its subscription back.
	resumed.cancel()
	h.waitSubscribers(sessionID, 2)
}

func TestEventStreamBadRequests(t *testing.T) {
	h := newHarness(t)
	r := h.read("/v1/live/" + sessionID + "/events?category=final_transcripts,finals")
	if r.status != 400 || !strings.Contains(r.json(t)["error"].(string), `(1 unknown)`) || strings.Contains(string(r.body), "finals") {
		t.Errorf("bad category: %d %s", r.status, r.body)
	}
	r = h.do(http.MethodGet, "/v1/live/"+sessionID+"/events", nil, map[string]string{
		"Authorization": "Bearer " + testReadToken, "Last-Event-ID": "abc",
	})
	if r.status != 400 {
		t.Errorf("bad Last-Event-ID: %d %s", r.status, r.body)
	}
}

func TestEventStreamWithoutFeedPolls(t *testing.T) {
	h := newHarness(t, withConfig(func(c *Config) { c.Feed = nil }), withReceiver(func(r *Receiver) {
		r.pollEvery = 20 * time.Millisecond
	}))
	s := h.openStream("/v1/live/"+sessionID+"/events", nil)
	storeLive(t, h, sessionID, map[string]any{"type": "start_session"})
	if ev := s.must(t); summary(t, ev) != "1 start_session lifecycle_events" {
		t.Errorf("polled event %+v", ev)
	}
}

func TestShutdownEndsStreams(t *testing.T) {
	h := newHarness(t)
	storeLive(t, h, sessionID, map[string]any{"type": "start_session"})
	s := h.openStream("/v1/live/"+sessionID+"/events", nil)
	if _, ok := s.next(t); !ok {
		t.Fatal("no first event")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := h.rcv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("shutdown took %s", d)
	}
	if ev, ok := s.next(t); ok {
		t.Errorf("event after shutdown: %+v", ev)
	}
	if n := h.feed.subscribers(sessionID); n != 0 {
		t.Errorf("%d subscriptions left", n)
	}
}
