package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// CallbackPolicy is how the sandbox delivers callbacks. The real service documents no retry
// policy; the sandbox retries so that receivers meet retries in tests: a non-2xx answer, a
// timeout or a network error is retried after each delay of Schedule in turn, then given up.
type CallbackPolicy struct {
	// Schedule lists the waits before each retry (default 1s, 2s, 5s, 15s, 60s, 300s: seven
	// attempts over about six and a half minutes).
	Schedule []time.Duration
	// Timeout bounds one attempt (default 10 s).
	Timeout time.Duration
}

// defaultCallbackSchedule is the retry schedule when none is configured.
var defaultCallbackSchedule = []time.Duration{
	1 * time.Second, 2 * time.Second, 5 * time.Second, 15 * time.Second, 60 * time.Second, 300 * time.Second,
}

// outbound is one callback request to deliver.
type outbound struct {
	url    string
	method string
	body   []byte
	// key is the job or session the callback belongs to, for logs.
	key   string
	event string
}

// callbackSender delivers callbacks with retries. Callbacks of one key (a live session) go
// through one ordered lane so they arrive in session order, unless the reorder fault is on.
type callbackSender struct {
	ctx    context.Context
	client *http.Client
	policy CallbackPolicy
	faults Faults
	dice   *dice
	log    *logrus.Entry

	mu    sync.Mutex
	lanes map[string]chan outbound
	wg    sync.WaitGroup
}

func newCallbackSender(ctx context.Context, client *http.Client, policy CallbackPolicy, faults Faults, log *logrus.Entry) *callbackSender {
	if policy.Schedule == nil {
		policy.Schedule = defaultCallbackSchedule
	}
	if policy.Timeout <= 0 {
		policy.Timeout = 10 * time.Second
	}
	return &callbackSender{
		ctx: ctx, client: client, policy: policy, faults: faults,
		dice: newDice(faults.Seed), log: log, lanes: map[string]chan outbound{},
	}
}

// send delivers one callback in the background.
func (c *callbackSender) send(o outbound) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.deliver(o)
	}()
}

// enqueue delivers o after every earlier callback of the same lane.
func (c *callbackSender) enqueue(lane string, o outbound) {
	c.mu.Lock()
	ch, ok := c.lanes[lane]
	if !ok {
		ch = make(chan outbound, 1024)
		c.lanes[lane] = ch
		c.wg.Add(1)
		go c.runLane(ch)
	}
	c.mu.Unlock()
	select {
	case ch <- o:
	case <-c.ctx.Done():
	}
}

// closeLane lets a lane finish what it holds and stop.
func (c *callbackSender) closeLane(lane string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.lanes[lane]; ok {
		close(ch)
		delete(c.lanes, lane)
	}
}

func (c *callbackSender) runLane(ch chan outbound) {
	defer c.wg.Done()
	window := c.faults.ReorderLive
	if window <= 1 {
		for o := range ch {
			c.deliver(o)
		}
		return
	}
	// Reorder fault: gather a window (or whatever arrived within a short pause) and send it
	// shuffled.
	var buf []outbound
	flush := func() {
		c.dice.shuffle(len(buf), func(i, j int) { buf[i], buf[j] = buf[j], buf[i] })
		for _, o := range buf {
			c.deliver(o)
		}
		buf = buf[:0]
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case o, ok := <-ch:
			if !ok {
				flush()
				return
			}
			buf = append(buf, o)
			if len(buf) >= window {
				flush()
			} else {
				timer.Reset(150 * time.Millisecond)
			}
		case <-timer.C:
			flush()
		}
	}
}

// wait blocks until every pending callback is delivered or given up.
func (c *callbackSender) wait() {
	c.mu.Lock()
	for lane, ch := range c.lanes {
		close(ch)
		delete(c.lanes, lane)
	}
	c.mu.Unlock()
	c.wg.Wait()
}

func (c *callbackSender) deliver(o outbound) {
	log := c.log.WithFields(logrus.Fields{"job_id": o.key, "event": o.event})
	if p := c.faults.DropCallbacks; p > 0 && c.dice.float() < p {
		// Never sent, nor retried: the receiver must reconcile to learn of it.
		log.Info("callback dropped by fault injection")
		return
	}
	if d := c.faults.CallbackDelay; d > 0 {
		if !sleepCtx(c.ctx, d) {
			return
		}
	}
	attempts := 1 + len(c.policy.Schedule)
	for i := 0; i < attempts; i++ {
		if i > 0 && !sleepCtx(c.ctx, c.policy.Schedule[i-1]) {
			return
		}
		status, err := c.attempt(o)
		forcedFail := i < c.faults.FailFirstAttempts
		if err == nil && status/100 == 2 && !forcedFail {
			log.WithField("attempt", i+1).Debug("callback delivered")
			for d := 0; d < c.faults.DuplicateCallbacks; d++ {
				_, _ = c.attempt(o)
			}
			return
		}
		entry := log.WithField("attempt", i+1)
		switch {
		case forcedFail:
			entry.Debug("callback attempt failed by fault injection")
		case err != nil:
			entry.WithError(err).Warn("callback attempt failed")
		default:
			entry.WithField("status", status).Warn("callback answered non-2xx")
		}
	}
	log.Error("callback given up after the last attempt")
}

func (c *callbackSender) attempt(o outbound) (int, error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.policy.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, o.method, o.url, bytes.NewReader(o.body))
	if err != nil {
		// The parse error would quote the URL, and its path holds the receiver's token.
		return 0, errors.New("build callback request: the callback url does not parse")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "scribehook-sandbox")
	resp, err := c.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			// Logged as is, the error would print the token in the callback URL.
			ue.URL = req.URL.Scheme + "://" + req.URL.Host + "/…"
		}
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
