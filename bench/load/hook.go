package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/scribehook/scribehook/api"
)

// hookReceiver is the webhook sink's target: it verifies each signature, counts deliveries per
// event id, and times each event's first arrival against its created_at (when serve received
// the callback). It can go down (its port closed) and come back on the same port.
type hookReceiver struct {
	wh   *standardwebhooks.Webhook
	addr string

	mu sync.Mutex
	arrivals
	srv     *http.Server
	firstAt map[string]time.Time // event id → first arrival
	lat     []time.Duration      // first arrival − created_at, per event id
	latAt   []time.Time          // when each lat sample arrived
	// keyOrder is the rank of each message key's first arrival: an ordered sink sends a
	// session's next event only after the previous one was answered, so ranks of one session
	// follow its order.
	keyOrder map[string]int
	bad      int
	total    int
}

func newHookReceiver() (*hookReceiver, error) {
	wh, err := standardwebhooks.NewWebhook(hookSecret)
	if err != nil {
		return nil, fmt.Errorf("webhook verifier: %w", err)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	h := &hookReceiver{wh: wh, addr: addr}
	h.reset()
	return h, h.up()
}

func (h *hookReceiver) url() string { return "http://" + h.addr + "/hook" }

// up listens on the receiver's address (again).
func (h *hookReceiver) up() error {
	var ln net.Listener
	var err error
	// The port of a server just closed can take a moment to be free again.
	for range 50 {
		if ln, err = net.Listen("tcp", h.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("webhook receiver listen: %w", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(h.serve), ReadHeaderTimeout: 10 * time.Second}
	h.mu.Lock()
	h.srv = srv
	h.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// down closes the port: connections are refused until up.
func (h *hookReceiver) down() {
	h.mu.Lock()
	srv := h.srv
	h.srv = nil
	h.mu.Unlock()
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
}

func (h *hookReceiver) serve(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	// refuse answers a delivery that is not a well-signed event and counts it as bad.
	refuse := func(status int) {
		h.mu.Lock()
		h.bad++
		h.mu.Unlock()
		w.WriteHeader(status)
	}
	if err := h.wh.Verify(body, r.Header); err != nil {
		refuse(http.StatusUnauthorized)
		return
	}
	var ev api.Event
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" || ev.ID != r.Header.Get("webhook-id") {
		refuse(http.StatusBadRequest)
		return
	}
	key := eventKey(&ev)
	h.mu.Lock()
	h.total++
	if h.add(key, ev.ID) {
		h.keyOrder[key] = len(h.keyOrder)
	}
	if _, seen := h.firstAt[ev.ID]; !seen {
		h.firstAt[ev.ID] = arrived
		h.lat = append(h.lat, arrived.Sub(ev.CreatedAt.Time))
		h.latAt = append(h.latAt, arrived)
	}
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// eventKey names what an event is about, independently of its id: a live message's utterance
// and finality (msgKey), or a job event's job and type.
func eventKey(ev *api.Event) string {
	if ev.Kind == api.KindLive && ev.Type == api.LiveEvent(api.MessageTranscript) {
		var m api.LiveMessage
		var d api.TranscriptData
		if json.Unmarshal(ev.Data, &m) == nil && json.Unmarshal(m.Data, &d) == nil {
			return msgKey(d.ID, d.IsFinal)
		}
	}
	return ev.JobID + "/" + ev.Type
}

// reset forgets what arrived so far (the warm-up's events).
func (h *hookReceiver) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.arrivals, h.firstAt, h.keyOrder = newArrivals(), map[string]time.Time{}, map[string]int{}
	h.lat, h.latAt, h.bad, h.total = nil, nil, 0, 0
}

// hookStats is a snapshot of what the receiver got.
type hookStats struct {
	Distinct, Total, Dups, Bad int
	// KeysTwice counts message keys that arrived under more than one event id: the same
	// delivery applied twice.
	KeysTwice int
	Keys      map[string]bool
	KeyOrder  map[string]int // the rank of each key's first arrival
	Lat       []time.Duration
	LatAt     []time.Time
}

func (h *hookReceiver) stats() hookStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := hookStats{Distinct: len(h.PerID), Total: h.total, Dups: h.dupIDs(), Bad: h.bad, Keys: make(map[string]bool, len(h.KeyIDs)), KeyOrder: maps.Clone(h.keyOrder)}
	for k, ids := range h.KeyIDs {
		s.Keys[k] = true
		if len(ids) > 1 {
			s.KeysTwice++
		}
	}
	s.Lat = append([]time.Duration(nil), h.lat...)
	s.LatAt = append([]time.Time(nil), h.latAt...)
	return s
}

// waitKeys waits until every key has arrived, or the deadline.
func (h *hookReceiver) waitKeys(keys []string, d time.Duration) (missing int) {
	deadline := time.Now().Add(d)
	for {
		h.mu.Lock()
		missing, _ = h.keyCounts(keys)
		h.mu.Unlock()
		if missing == 0 || time.Now().After(deadline) {
			return missing
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// errHook is returned by checks of the webhook receiver.
var errHook = errors.New("webhook sink check failed")
