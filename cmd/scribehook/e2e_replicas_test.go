package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/internal/testinfra"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/postgres"
	"github.com/scribehook/scribehook/submitter"
)

// Two serve replicas on different ports share PostgreSQL and a broker; the sandbox's callbacks
// reach them through a round-robin reverse proxy (the load balancer), so a live session's
// callbacks alternate between the replicas. Every delivery is stored and applied once in all,
// every live session is stored in the order the sandbox sent it, and the sinks (a file sink
// and an ordered webhook sink, each built by both replicas over the one queue in PostgreSQL)
// get every event once in effect, the webhook in session order.
func TestE2EReplicasRedisStream(t *testing.T) { testReplicas(t, handlers.BusRedisStream) }

func TestE2EReplicasNATS(t *testing.T) { testReplicas(t, handlers.BusNATS) }

func testReplicas(t *testing.T, driver string) {
	schema := testinfra.PGSchema(t)
	dsn := schema.DSN
	brokerURL := startTestBroker(t, driver, "")
	world, client := startWorld(t, sandbox.Config{APIKey: e2eKey, Callbacks: sandboxtest.QuickRetries})
	fs := world.Files

	out := filepath.Join(t.TempDir(), "out")
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	hook := newSignedHook(t, secret)
	var replicas []*replicaServer
	for i := range 2 {
		replicas = append(replicas, startReplicaServer(t, fmt.Sprintf("replica-%d", i), dsn, driver, brokerURL, client, out, hook.URL, secret))
	}
	// The sandbox stops first: its retries would otherwise keep the replicas' connections busy.
	t.Cleanup(func() { _ = world.Close() })
	lb := newRoundRobin(t, replicas)
	st := replicas[0].store

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Pre-recorded jobs and two live sessions at once.
	var jobIDs []string
	for range 4 {
		created, err := client.CreatePreRecorded(ctx, api.PreRecordedRequest{
			AudioURL: fs.URL + "/sample.wav", Callback: api.Bool(true),
			CallbackConfig: &api.CallbackConfig{URL: mintCallbackURL(t, st, lb.URL, api.KindPreRecorded)},
		})
		if err != nil {
			t.Fatal(err)
		}
		jobIDs = append(jobIDs, created.ID)
	}
	var (
		mu       sync.Mutex
		sessions []string
		wg       sync.WaitGroup
	)
	for range 2 {
		callbackURL := mintCallbackURL(t, st, lb.URL, api.KindLive)
		wg.Go(func() {
			id, err := streamLiveSession(ctx, client, callbackURL, fs.WAV, api.EveryMessage(true))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			sessions = append(sessions, id)
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Every job lands, once.
	for _, id := range jobIDs {
		rec := waitFinal(t, st, id)
		if rec.Job.Status != api.StatusDone || rec.Local.Deliveries != 1 {
			t.Errorf("job %s: %s, %d deliveries", id, rec.Job.Status, rec.Local.Deliveries)
		}
	}
	// Every live session is stored exactly as the sandbox sent it, in its order.
	liveEvents := 0
	seqOfPayload := map[string]int64{}
	for _, id := range sessions {
		rec := waitFinal(t, st, id)
		job, err := client.GetLive(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		sent := apitest.MustResult(&job).Messages
		stored, err := st.LiveMessages(ctx, id, 0, 100000)
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) != len(sent) || rec.Local.Deliveries != len(sent) {
			t.Fatalf("session %s: %d stored, %d deliveries counted, the sandbox sent %d", id, len(stored), rec.Local.Deliveries, len(sent))
		}
		for i, m := range stored {
			if m.Seq != int64(i+1) || string(m.Payload) != sent[i] {
				t.Fatalf("session %s message %d (seq %d) differs from the %d-th sent:\n got %s\nwant %s", id, i, m.Seq, i, m.Payload, sent[i])
			}
			seqOfPayload[id+"\x00"+string(m.Payload)] = m.Seq
		}
		liveEvents += len(stored)
	}
	testwait.For(t, "an empty inbox backlog", 30*time.Second, func() bool {
		n, err := st.InboxBacklog(ctx)
		return err == nil && n == 0
	})
	// The replicas shared the work: each took callbacks and applied rows, and together they
	// applied every row once.
	var rows int64
	if err := schema.DB.QueryRowContext(ctx, `SELECT count(*) FROM inbox`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	var applied float64
	for _, r := range replicas {
		n := metricValue(t, r.addr, "scribehook_deliveries_processed_total")
		if n == 0 || lb.served(r.addr) == 0 {
			t.Errorf("%s applied %v rows and received %d requests: the replicas did not share the work", r.name, n, lb.served(r.addr))
		}
		applied += n
	}
	if applied != float64(rows) {
		t.Errorf("the replicas applied %v rows in all, the inbox holds %d", applied, rows)
	}

	// The file sink: every live event once, under its session (both replicas write the same
	// directory, each delivery by whichever replica claimed it).
	testwait.For(t, "every live event in the file sink", 30*time.Second, func() bool {
		n := 0
		for _, id := range sessions {
			n += liveEventFiles(out, id)
		}
		return n == liveEvents
	})
	for _, id := range jobIDs {
		testwait.For(t, "the job's events in the file sink", 30*time.Second, func() bool {
			entries, _ := os.ReadDir(filepath.Join(out, id, "events"))
			return len(entries) >= 1
		})
	}
	// The ordered webhook: every live event once in effect, each session's in its order.
	testwait.For(t, "every live event at the webhook", 30*time.Second, func() bool { return hook.distinct() == liveEvents })
	time.Sleep(300 * time.Millisecond) // a duplicate still under way would show now
	firsts, dups, bad := hook.result()
	if bad != 0 {
		t.Errorf("%d webhook requests failed verification", bad)
	}
	if dups != 0 {
		t.Logf("%d events delivered more than once (same webhook-id: once in effect)", dups)
	}
	last := map[string]int64{}
	for _, ev := range firsts {
		seq, ok := seqOfPayload[ev.JobID+"\x00"+string(ev.Data)]
		if !ok {
			t.Fatalf("webhook event %s of %s matches no stored message", ev.ID, ev.JobID)
		}
		if seq <= last[ev.JobID] {
			t.Fatalf("session %s: webhook got seq %d after seq %d", ev.JobID, seq, last[ev.JobID])
		}
		last[ev.JobID] = seq
	}
	t.Logf("%s: %d rows, %d live messages in %d sessions, requests per replica %v", driver, rows, liveEvents, len(sessions), lb.counts())
}

// replicaServer is one serve replica: its own store pool, bus connection, sinks and port.
type replicaServer struct {
	name  string
	addr  string
	store store.Store
	srv   *scribehook.Kit
}

func startReplicaServer(t *testing.T, name, dsn, driver, brokerURL string, client *submitter.Client, out, hookURL, secret string) *replicaServer {
	t.Helper()
	st, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	hookSpec := sinks.Spec{
		Name: "hook", Kind: "webhook", URL: hookURL, SigningSecrets: []string{secret}, Ordered: true,
		Allow: []string{"127.0.0.0/8"}, Filter: sinks.Filter{Events: []string{"live.*"}},
	}
	srv := serveOn(t, st, "", serverOptions{
		Service: client, ReadToken: "read-token", Logger: logx.Discard(),
		Routes: []receiver.Route{{Name: "account", Token: "account-route-token"}},
		Sinks:  []sinkSetup{fileSink(t, out), newSink(t, hookSpec, logx.Discard())},
		Bus: configs.BusConfig{Driver: driver, URL: brokerURL, Consumer: name, ClaimAfter: 5 * time.Second,
			SweepInterval: 2 * time.Second, SweepGrace: time.Second},
	})
	t.Cleanup(func() { srv.stop(t) })
	return &replicaServer{name: name, addr: srv.addr, store: st, srv: srv.kit}
}

// roundRobin is the load balancer: a reverse proxy sending each request to the next replica.
type roundRobin struct {
	*httptest.Server
	mu  sync.Mutex
	per map[string]int
}

func newRoundRobin(t *testing.T, replicas []*replicaServer) *roundRobin {
	rr := &roundRobin{per: map[string]int{}}
	var next atomic.Uint64
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		target := replicas[next.Add(1)%uint64(len(replicas))].addr
		rr.mu.Lock()
		rr.per[target]++
		rr.mu.Unlock()
		r.SetURL(&url.URL{Scheme: "http", Host: target})
	}}
	rr.Server = httptest.NewServer(proxy)
	t.Cleanup(rr.Close)
	return rr
}

func (rr *roundRobin) served(addr string) int {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.per[addr]
}

func (rr *roundRobin) counts() map[string]int {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	out := map[string]int{}
	for k, v := range rr.per {
		out[k] = v
	}
	return out
}

// metricValue sums a counter of a replica's /metrics (the text format: one sample a line).
func metricValue(t *testing.T, addr, name string) float64 {
	t.Helper()
	_, body := httpDo(t, http.MethodGet, "http://"+addr+"/metrics", http.Header{"Authorization": {"Bearer read-token"}}, nil)
	var v float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		var x float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &x); err == nil {
			v += x
		}
	}
	return v
}

// startTestBroker runs Debian's redis-server or nats-server (JetStream, with a store directory)
// on a free loopback port until the test ends, and returns its URL; without the binary the
// test skips. A password, when given, is required by the broker and is in the URL.
func startTestBroker(t *testing.T, driver, password string) string {
	t.Helper()
	return testinfra.RunBroker(t, testinfra.BrokerOptions{Kind: driver, Password: password}).URL
}
