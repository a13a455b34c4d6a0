package receiver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// streamBatch is how many stored messages one store read of the event stream takes.
const streamBatch = 256

// stream is one client of GET /v1/live/:id/events. Everything in it is the receiver's own:
// the stream runs after the handler returned, when Fiber's Ctx is already reused.
type stream struct {
	sessionID  string
	categories map[api.MessageCategory]bool // empty: all
	after      int64
	conn       net.Conn
	notify     <-chan struct{}
	log        *logrus.Entry
}

// liveEvents is GET /v1/live/:id/events: server-sent events of a session, the stored messages
// first, then new ones as the live feed announces them.
func (r *Receiver) liveEvents(c *fiber.Ctx) error {
	var raw []string
	for _, v := range c.Context().QueryArgs().PeekMulti("category") {
		raw = append(raw, string(v))
	}
	cats, err := parseCategories(strings.Join(raw, ","))
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	return r.openStream(c, cats)
}

// openStream answers c with the event stream of the session of its path, messages of cats
// only (all when empty), from the one after Last-Event-ID.
func (r *Receiver) openStream(c *fiber.Ctx, cats map[api.MessageCategory]bool) error {
	after := int64(0)
	if s := strings.TrimSpace(c.Get("Last-Event-ID")); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return writeError(c, fiber.StatusBadRequest, "Last-Event-ID must be a message sequence number")
		}
		after = n
	}
	id, err := pathParam(c, "id")
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	st := &stream{
		sessionID:  strings.Clone(id),
		categories: cats,
		after:      after,
		conn:       c.Context().Conn(),
	}
	st.log = r.log.WithField("session_id", st.sessionID)
	// Subscribe before the first store read: a message stored in between then still pings.
	cancel := func() {}
	if r.cfg.Feed != nil {
		st.notify, cancel = r.cfg.Feed.Subscribe(st.sessionID)
	}
	c.Set(fiber.HeaderContentType, "text/event-stream; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no") // proxies must not hold events back
	if c.App() != r.app && c.App().Config().WriteTimeout <= 0 {
		// Each flush sets the connection's write deadline (flush); a server without a
		// WriteTimeout of its own (a parent app's, by default) never lifts it, so the connection
		// must not carry another request after the stream.
		c.Context().SetConnectionClose()
	}
	c.Status(fiber.StatusOK).Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer cancel()
		r.runStream(w, st)
	})
	return nil
}

// runStream writes events until the client goes away, the store fails or Shutdown.
func (r *Receiver) runStream(w *bufio.Writer, st *stream) {
	heartbeat := time.NewTicker(r.heartbeat)
	defer heartbeat.Stop()
	var poll <-chan time.Time
	if st.notify == nil {
		t := time.NewTicker(r.pollEvery)
		defer t.Stop()
		poll = t.C
	}
	// A first comment sends the headers at once, so clients know the stream is open.
	if _, err := w.WriteString(": stream open\n\n"); err != nil || r.flush(w, st) != nil {
		return
	}
	for {
		if err := r.sendStored(w, st); err != nil {
			st.log.WithError(err).Debug("event stream ended")
			return
		}
		select {
		case <-r.closing:
			return
		case <-st.notify:
		case <-poll:
		case <-heartbeat.C:
			if _, err := w.WriteString(": heartbeat\n\n"); err != nil || r.flush(w, st) != nil {
				return
			}
		}
	}
}

// sendStored writes every stored message after st.after that passes the filter.
func (r *Receiver) sendStored(w *bufio.Writer, st *stream) error {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		msgs, err := r.cfg.Store.LiveMessages(ctx, st.sessionID, st.after, streamBatch)
		cancel()
		if err != nil {
			return fmt.Errorf("read messages: %w", err)
		}
		for _, m := range msgs {
			st.after = m.Seq
			if !st.wants(m) {
				continue
			}
			if err := writeEvent(w, m); err != nil {
				return err
			}
		}
		if len(msgs) > 0 {
			if err := r.flush(w, st); err != nil {
				return err
			}
		}
		if len(msgs) < streamBatch {
			return nil
		}
	}
}

// flush pushes buffered events to the client. fasthttp sets the connection's write deadline
// once per response (fiber.Config.WriteTimeout), which would cut a stream after that long; each
// flush moves the deadline forward instead, so only a client that stops reading times out.
func (r *Receiver) flush(w *bufio.Writer, st *stream) error {
	if st.conn != nil {
		if err := st.conn.SetWriteDeadline(time.Now().Add(r.writeTimeout)); err != nil {
			return fmt.Errorf("extend write deadline: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("flush events: %w", err)
	}
	return nil
}

// wants applies the category filter. A failed add-on message is in errors and in its own
// category (api.MessageCategories), while the store keeps only the first: decode what the
// categories depend on (api.DecodeLiveMessageHead, as classification does) to know.
func (st *stream) wants(m store.LiveMessage) bool {
	if len(st.categories) == 0 || st.categories[m.Category] {
		return true
	}
	head, err := api.DecodeLiveMessageHead(m.Payload)
	if err != nil {
		return false
	}
	for _, c := range head.Categories() {
		if st.categories[c] {
			return true
		}
	}
	return false
}

func writeEvent(w *bufio.Writer, m store.LiveMessage) error {
	// json.Marshal compacts the raw payload, so data is one line as SSE requires.
	data, err := json.Marshal(viewOf(m))
	if err != nil {
		return fmt.Errorf("encode message %d: %w", m.Seq, err)
	}
	_, err = fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", m.Seq, eventName(m.Type), data)
	return err
}

// eventName keeps a line break in a message type from breaking the event framing.
func eventName(t api.MessageType) string {
	s := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, string(t))
	if s == "" {
		return "message"
	}
	return s
}

// parseCategories reads ?category=a,b (repeatable) and names every unknown category.
func parseCategories(raw string) (map[api.MessageCategory]bool, error) {
	set := map[api.MessageCategory]bool{}
	var bad []string
	for item := range strings.SplitSeq(raw, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		c := api.MessageCategory(item)
		if !c.Valid() {
			bad = append(bad, strconv.Quote(item))
			continue
		}
		set[c] = true
	}
	if len(bad) > 0 {
		names := make([]string, len(api.Categories))
		for i, c := range api.Categories {
			names[i] = string(c)
		}
		return nil, fmt.Errorf("category must be one of %s (%d unknown)", strings.Join(names, ", "), len(bad))
	}
	return set, nil
}
