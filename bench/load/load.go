package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// loadSpec is one load run: calls sent in index order by Conns workers over as many keep-alive
// connections, at Rate per second (0: as fast as the server answers), until every call is sent
// or Duration has passed.
type loadSpec struct {
	Addr     string
	Path     string
	Calls    []callback
	Rate     float64
	Conns    int
	Duration time.Duration
	// Retry resends a delivery that failed (no answer, 5xx, 429) the way the service does,
	// with back-off, until it gets an answer that is not a failure or RetryFor has passed.
	Retry    bool
	RetryFor time.Duration
	// Timeout bounds one attempt (default 30 s).
	Timeout time.Duration
	// Acked counts calls answered 2xx as they complete, for runs that act on progress.
	Acked *atomic.Int64
}

// outcome is what happened to one call.
type outcome struct {
	Sent     bool
	Status   int // the last answer's status; 0 when the last attempt got no answer
	AckID    int64
	Ack      string // stored, duplicate, quarantined
	Latency  time.Duration
	Attempts int
	Err      string
}

// loadResult is a load run's outcomes and summary.
type loadResult struct {
	Out []outcome
	loadTotals
}

// loadTotals are the figures every load reports, straight to serve or through the balancer.
type loadTotals struct {
	Sent    int
	OK      int
	Elapsed time.Duration
	// Statuses counts final answers by status (0: no answer).
	Statuses map[int]int
	// Lat is the ack latency of the 2xx answers: from the moment the schedule meant the call to
	// be sent (at a fixed rate, a call delayed by a busy server counts its wait) to the answer.
	Lat latencies
	// FirstErr is an example of a failure, for the report.
	FirstErr string
}

// tally sums the outcomes of a load, at(i) being the i-th of n, the last answered elapsed
// after the start.
func tally(n int, at func(i int) *outcome, elapsed time.Duration) loadTotals {
	t := loadTotals{Elapsed: elapsed, Statuses: map[int]int{}}
	var lat []time.Duration
	for i := range n {
		o := at(i)
		if !o.Sent {
			continue
		}
		t.Sent++
		t.Statuses[o.Status]++
		if o.Status/100 == 2 {
			t.OK++
			lat = append(lat, o.Latency)
		} else if t.FirstErr == "" {
			t.FirstErr = fmt.Sprintf("status %d: %s", o.Status, o.Err)
		}
	}
	t.Lat = summarise(lat)
	return t
}

func (r loadTotals) throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK) / r.Elapsed.Seconds()
}

func (r loadTotals) statusLine() string {
	keys := make([]int, 0, len(r.Statuses))
	for k := range r.Statuses {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		name := fmt.Sprint(k)
		if k == 0 {
			name = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%s: %d", name, r.Statuses[k]))
	}
	return strings.Join(parts, ", ")
}

func statusLine(m map[int]int) string { return loadTotals{Statuses: m}.statusLine() }

// stamp records in last the time since start, if later than what it holds: the end of a load
// is its last answer, whichever worker got it.
func stamp(last *atomic.Int64, start time.Time) {
	for {
		now := int64(time.Since(start))
		prev := last.Load()
		if now <= prev || last.CompareAndSwap(prev, now) {
			return
		}
	}
}

// newHostClient is a client of one server for a load: conns connections, each call bounded by
// timeout. A retry is the tool's decision (it counts attempts and picks the server), never the
// client's.
func newHostClient(addr string, conns int, timeout time.Duration) *fasthttp.HostClient {
	return &fasthttp.HostClient{
		Addr:               addr,
		MaxConns:           conns,
		ReadTimeout:        timeout,
		WriteTimeout:       timeout,
		MaxConnWaitTimeout: timeout,
		RetryIfErr:         func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
	}
}

// post sends body to uri once and records the answer in o: its status (0: none), the
// receiver's ack of a 2xx, or why it failed. It returns the error of a call that got no answer.
func (o *outcome) post(client *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response, uri string, body []byte, timeout time.Duration) error {
	req.Reset()
	resp.Reset()
	req.SetRequestURI(uri)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.SetBodyRaw(body)
	o.Attempts++
	err := client.DoTimeout(req, resp, timeout)
	o.Status, o.Err = 0, ""
	if err != nil {
		o.Err = err.Error()
		return err
	}
	o.Status = resp.StatusCode()
	if o.Status/100 == 2 {
		var ack ackBody
		if json.Unmarshal(resp.Body(), &ack) == nil {
			o.AckID, o.Ack = ack.ID, ack.Status
		}
		return nil
	}
	o.Err = truncate(string(resp.Body()), 200)
	return nil
}

// retryable says whether the service would send a delivery again after this answer: no
// answer, a 5xx or a 429.
func retryable(status int) bool {
	return status == 0 || status >= 500 || status == fasthttp.StatusTooManyRequests
}

// backoff is the service's wait between retries: 20 ms, doubling up to 500 ms.
type backoff struct{ d time.Duration }

func (b *backoff) wait() {
	if b.d == 0 {
		b.d = 20 * time.Millisecond
	}
	time.Sleep(b.d)
	b.d = min(b.d*2, 500*time.Millisecond)
}

// ackBody is the receiver's answer to a committed delivery.
type ackBody struct {
	Status string `json:"status"`
	ID     int64  `json:"id"`
}

func runLoad(spec loadSpec) loadResult {
	if spec.Conns < 1 {
		spec.Conns = 1
	}
	if spec.Timeout <= 0 {
		spec.Timeout = 30 * time.Second
	}
	client := newHostClient(spec.Addr, spec.Conns, spec.Timeout)
	defer client.CloseIdleConnections()
	uri := "http://" + spec.Addr + spec.Path
	out := make([]outcome, len(spec.Calls))
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	var last atomic.Int64 // nanoseconds after start of the last answer
	for range spec.Conns {
		wg.Go(func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for {
				i := int(next.Add(1) - 1)
				if i >= len(spec.Calls) {
					return
				}
				begin := time.Now()
				if spec.Rate > 0 {
					intended := start.Add(time.Duration(float64(i) / spec.Rate * float64(time.Second)))
					if spec.Duration > 0 && intended.Sub(start) >= spec.Duration {
						return
					}
					if d := time.Until(intended); d > 0 {
						time.Sleep(d)
					}
					begin = intended
				} else if spec.Duration > 0 && begin.Sub(start) >= spec.Duration {
					return
				}
				o := &out[i]
				o.Sent = true
				send(client, req, resp, uri, spec, spec.Calls[i].Body, o)
				o.Latency = time.Since(begin)
				if o.Status/100 == 2 && spec.Acked != nil {
					spec.Acked.Add(1)
				}
				stamp(&last, start)
			}
		})
	}
	wg.Wait()
	return loadResult{Out: out, loadTotals: tally(len(out), func(i int) *outcome { return &out[i] }, time.Duration(last.Load()))}
}

// send delivers one body, with the spec's retries.
func send(client *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response, uri string, spec loadSpec, body []byte, o *outcome) {
	var deadline time.Time
	if spec.Retry {
		deadline = time.Now().Add(spec.RetryFor)
	}
	var pause backoff
	for {
		_ = o.post(client, req, resp, uri, body, spec.Timeout)
		if o.Status/100 == 2 || !spec.Retry || !retryable(o.Status) || time.Now().After(deadline) {
			return
		}
		pause.wait()
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
