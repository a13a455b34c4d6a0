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
	Out     []outcome
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

func (r loadResult) throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK) / r.Elapsed.Seconds()
}

func (r loadResult) statusLine() string {
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
	client := &fasthttp.HostClient{
		Addr:               spec.Addr,
		MaxConns:           spec.Conns,
		ReadTimeout:        spec.Timeout,
		WriteTimeout:       spec.Timeout,
		MaxConnWaitTimeout: spec.Timeout,
		// A retry is the tool's decision (it counts attempts), never the client's.
		RetryIfErr: func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
	}
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
				for {
					now := int64(time.Since(start))
					prev := last.Load()
					if now <= prev || last.CompareAndSwap(prev, now) {
						break
					}
				}
			}
		})
	}
	wg.Wait()
	res := loadResult{Out: out, Elapsed: time.Duration(last.Load()), Statuses: map[int]int{}}
	var lat []time.Duration
	for _, o := range out {
		if !o.Sent {
			continue
		}
		res.Sent++
		res.Statuses[o.Status]++
		if o.Status/100 == 2 {
			res.OK++
			lat = append(lat, o.Latency)
		} else if res.FirstErr == "" {
			res.FirstErr = fmt.Sprintf("status %d: %s", o.Status, o.Err)
		}
	}
	res.Lat = summarise(lat)
	return res
}

// send delivers one body, with the spec's retries.
func send(client *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response, uri string, spec loadSpec, body []byte, o *outcome) {
	var deadline time.Time
	if spec.Retry {
		deadline = time.Now().Add(spec.RetryFor)
	}
	backoff := 20 * time.Millisecond
	for {
		req.Reset()
		resp.Reset()
		req.SetRequestURI(uri)
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(body)
		o.Attempts++
		err := client.DoTimeout(req, resp, spec.Timeout)
		o.Status, o.Err = 0, ""
		if err != nil {
			o.Err = err.Error()
		} else {
			o.Status = resp.StatusCode()
			if o.Status/100 == 2 {
				var ack ackBody
				if jerr := json.Unmarshal(resp.Body(), &ack); jerr == nil {
					o.AckID, o.Ack = ack.ID, ack.Status
				}
				return
			}
			o.Err = truncate(string(resp.Body()), 200)
		}
		retryable := o.Status == 0 || o.Status >= 500 || o.Status == fasthttp.StatusTooManyRequests
		if !spec.Retry || !retryable || time.Now().After(deadline) {
			return
		}
		time.Sleep(backoff)
		backoff = min(backoff*2, 500*time.Millisecond)
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
