package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// The load of the replicas run goes through a small load balancer in the tool: round robin per
// request over the replicas it considers up, a passive health check (a connection error or a
// timeout takes a replica out at once and the request is sent to another one, as an HTTP load
// balancer retries a request that never reached a server) and an active one: GET /readyz every
// 100 ms brings a replica back when it answers 200 and, in the readyz mode, takes it out after
// two failed checks in a row (the usual "unhealthy threshold").

// backend is one replica behind the balancer.
type backend struct {
	idx    int
	addr   string
	client *fasthttp.HostClient
	up     atomic.Bool
	fails  int          // consecutive failed checks (health loop only)
	acked  atomic.Int64 // 2xx answered by this replica
}

type balancer struct {
	backends []*backend
	rr       atomic.Uint64
	timeout  time.Duration
	readyz   bool         // the active check also takes replicas out
	ejected  atomic.Int64 // times a replica was taken out
	stopCh   chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
	logf     func(format string, args ...any)
}

func newBalancer(addrs []string, conns int, timeout time.Duration, readyz bool, logf func(string, ...any)) *balancer {
	b := &balancer{timeout: timeout, readyz: readyz, stopCh: make(chan struct{}), logf: logf}
	for i, a := range addrs {
		be := &backend{idx: i, addr: a, client: newHostClient(a, conns, timeout)}
		be.up.Store(true)
		b.backends = append(b.backends, be)
	}
	b.wg.Go(b.healthLoop)
	return b
}

func (b *balancer) close() {
	b.stopOnce.Do(func() { close(b.stopCh) })
	b.wg.Wait()
	for _, be := range b.backends {
		be.client.CloseIdleConnections()
	}
}

// healthLoop polls /readyz of every replica: a replica out of the rotation comes back at its
// first 200; in the readyz mode a replica in it goes out after two failed checks in a row.
func (b *balancer) healthLoop() {
	client := &http.Client{Timeout: time.Second}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-b.stopCh:
			return
		case <-t.C:
		}
		for _, be := range b.backends {
			up := be.up.Load()
			if up && !b.readyz {
				continue
			}
			status, why := 0, ""
			resp, err := client.Get("http://" + be.addr + "/readyz")
			if err != nil {
				why = err.Error()
			} else {
				status = resp.StatusCode
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
				resp.Body.Close()
				why = fmt.Sprintf("/readyz %d %s", status, strings.TrimSpace(string(body)))
			}
			if status == http.StatusOK {
				be.fails = 0
				if !be.up.Load() {
					// Connections pooled before the replica went away are dead: a restarted
					// process never saw them.
					be.client.CloseIdleConnections()
				}
				if be.up.CompareAndSwap(false, true) {
					b.logf("balancer: replica %d (%s) ready: back in the rotation", be.idx+1, be.addr)
				}
				continue
			}
			be.fails++
			if up && be.fails >= 2 {
				b.eject(be, errors.New(why))
			}
		}
	}
}

func (b *balancer) eject(be *backend, why error) {
	if be.up.CompareAndSwap(true, false) {
		be.client.CloseIdleConnections()
		b.ejected.Add(1)
		b.logf("balancer: replica %d (%s) out of the rotation: %v", be.idx+1, be.addr, why)
	}
}

// choose returns the first replica up from hint on, or nil when none is up.
func (b *balancer) choose(hint int) *backend {
	n := len(b.backends)
	for k := range n {
		if be := b.backends[(hint+k)%n]; be.up.Load() {
			return be
		}
	}
	return nil
}

// rOutcome is what happened to one callback of the replicas run: an outcome (its Latency from
// the first attempt to the final answer) and where it went.
type rOutcome struct {
	outcome
	Replica int // the replica that answered 2xx (0-based); -1 when none
	// Failovers counts attempts that got no answer (connection refused or reset, timeout) and
	// were sent again to another replica.
	Failovers int
}

// deliver sends one body through the balancer until it gets a 2xx, a final refusal (4xx
// other than 429), or the deadline. No answer: the next replica at once. 5xx or 429: the
// service's retry, after a back-off, to whichever replica is next.
func (b *balancer) deliver(req *fasthttp.Request, resp *fasthttp.Response, body []byte, hint int, retryFor time.Duration) rOutcome {
	o := rOutcome{outcome: outcome{Sent: true}, Replica: -1}
	begin := time.Now()
	deadline := begin.Add(retryFor)
	var pause backoff
	for attempt := 0; ; attempt++ {
		be := b.choose(hint + attempt)
		if be == nil {
			if time.Now().After(deadline) {
				o.Err = "no replica up"
				break
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if err := o.post(be.client, req, resp, "http://"+be.addr+callbackPath, body, b.timeout); err != nil {
			o.Failovers++
			if !errors.Is(err, fasthttp.ErrNoFreeConns) {
				b.eject(be, err)
			}
			if time.Now().After(deadline) {
				break
			}
			continue
		}
		if o.Status/100 == 2 {
			o.Replica = be.idx
			be.acked.Add(1)
			break
		}
		if !retryable(o.Status) || time.Now().After(deadline) {
			break
		}
		pause.wait()
	}
	o.Latency = time.Since(begin)
	return o
}

// replicaLoad is one load of the replicas run.
type replicaLoad struct {
	Calls    []callback
	Sessions int // live calls are Calls[:LiveN]; call i belongs to session i % Sessions
	LiveN    int
	Conns    int
	Rate     float64       // callbacks per second over all connections; 0: as fast as answered
	Duration time.Duration // bound of the load; 0: none
	RetryFor time.Duration
	Acked    *atomic.Int64
}

// replicaLoadResult is the outcomes and their summary.
type replicaLoadResult struct {
	Out []rOutcome
	loadTotals
	// Retried counts callbacks that needed more than one attempt; Failovers the attempts that
	// got no answer and went to another replica; Abandoned the sessions whose remaining
	// messages were not sent because one of theirs never got a 2xx.
	Retried, Failovers, Abandoned int
	Duplicates                    int // 2xx answered "duplicate": a retry of a stored delivery
}

func (r replicaLoadResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d sent, %d answered 2xx in %s: %.0f/s; ack %s", r.Sent, r.OK, r.Elapsed.Round(time.Millisecond), r.throughput(), r.Lat)
	fmt.Fprintf(&b, "; %d needed more than one attempt, %d attempts failed over to another replica, %d answered duplicate",
		r.Retried, r.Failovers, r.Duplicates)
	if r.OK != r.Sent {
		fmt.Fprintf(&b, "; final answers %s; e.g. %s", r.statusLine(), r.FirstErr)
	}
	if r.Abandoned > 0 {
		fmt.Fprintf(&b, "; %d sessions abandoned", r.Abandoned)
	}
	return b.String()
}

// workQueues gives each connection its calls in the order it sends them: the live sessions s
// with s % conns == g, their messages interleaved in session order, and every conns-th job
// result spread evenly among them. One connection sends one call at a time, so every message
// of a session is sent after the previous one's 2xx, the way the service sends them.
func workQueues(l replicaLoad) [][]int {
	qs := make([][]int, l.Conns)
	var jobs [][]int = make([][]int, l.Conns)
	for i := range l.Calls {
		if i < l.LiveN {
			g := (i % l.Sessions) % l.Conns
			qs[g] = append(qs[g], i)
		} else {
			g := (i - l.LiveN) % l.Conns
			jobs[g] = append(jobs[g], i)
		}
	}
	for g := range qs {
		if len(jobs[g]) == 0 {
			continue
		}
		live := qs[g]
		merged := make([]int, 0, len(live)+len(jobs[g]))
		every := max(1, len(live)/(len(jobs[g])+1))
		j := 0
		for k, i := range live {
			merged = append(merged, i)
			if (k+1)%every == 0 && j < len(jobs[g]) {
				merged = append(merged, jobs[g][j])
				j++
			}
		}
		merged = append(merged, jobs[g][j:]...)
		qs[g] = merged
	}
	return qs
}

// run sends the load. A live message goes to replica (session + its position in the session)
// mod N, so consecutive messages of a session alternate between replicas; a job result goes to
// the next replica of a global round robin.
func (b *balancer) run(l replicaLoad) replicaLoadResult {
	if l.Conns < 1 {
		l.Conns = 1
	}
	qs := workQueues(l)
	out := make([]rOutcome, len(l.Calls))
	var sent atomic.Int64
	var last atomic.Int64
	var abandoned atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for g := range l.Conns {
		wg.Go(func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			stopped := map[int]bool{}
			for _, i := range qs[g] {
				session := -1
				if i < l.LiveN {
					session = i % l.Sessions
					if stopped[session] {
						continue
					}
				}
				if l.Duration > 0 && time.Since(start) >= l.Duration {
					return
				}
				if l.Rate > 0 {
					k := sent.Add(1) - 1
					if d := time.Until(start.Add(time.Duration(float64(k) / l.Rate * float64(time.Second)))); d > 0 {
						time.Sleep(d)
					}
				}
				hint := int(b.rr.Add(1))
				if session >= 0 {
					hint = session + i/l.Sessions
				}
				o := b.deliver(req, resp, l.Calls[i].Body, hint, l.RetryFor)
				out[i] = o
				if o.Status/100 == 2 {
					if l.Acked != nil {
						l.Acked.Add(1)
					}
				} else if session >= 0 {
					// The service would not send the next message before this one's 2xx.
					stopped[session] = true
					abandoned.Add(1)
				}
				stamp(&last, start)
			}
		})
	}
	wg.Wait()
	res := replicaLoadResult{Out: out, Abandoned: int(abandoned.Load()),
		loadTotals: tally(len(out), func(i int) *outcome { return &out[i].outcome }, time.Duration(last.Load()))}
	for _, o := range out {
		if !o.Sent {
			continue
		}
		res.Failovers += o.Failovers
		if o.Attempts > 1 {
			res.Retried++
		}
		if o.Status/100 == 2 && o.Ack == "duplicate" {
			res.Duplicates++
		}
	}
	return res
}

// perReplica describes how the 2xx answers were spread over the replicas.
func (b *balancer) perReplica() string {
	var parts []string
	for _, be := range b.backends {
		parts = append(parts, fmt.Sprintf("replica %d %d", be.idx+1, be.acked.Load()))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
