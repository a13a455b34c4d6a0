package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// faultSlow opens, on loopback, a flood of idle connections, slow-header clients (slowloris)
// and slow-body clients, holds them while ordinary callbacks keep coming, and checks that
// memory stays bounded, that ordinary callbacks are still answered, that serve closes the slow
// connections at its read timeout, and that its goroutines return to their count before. The
// slow clients come from many loopback addresses, each under serve's cap of connections per
// address, as a botnet would; one more address opens more than the cap, and serve must answer
// exactly the connections past it with 429 at once.
func faultSlow(args []string) error {
	fs, c := newFlags("fault slow")
	flood := fs.Int("flood", 1000, "idle connections that never send a byte")
	slowHead := fs.Int("slowloris", 100, "connections sending their headers one byte per second")
	slowBody := fs.Int("slowbody", 20, "connections sending a body one KiB per second")
	bodySize := fs.Int("slowbody-size", 8<<20, "the Content-Length the slow bodies announce (bytes)")
	hold := fs.Duration("hold", 70*time.Second, "how long the slow connections are held (serve's read timeout is 60 s)")
	rate := fs.Float64("rate", 200, "ordinary callbacks per second meanwhile")
	maxRSS := fs.Int("max-rss-mib", 150, "bound of serve's resident memory")
	perAddr := fs.Int("per-addr", 200, "slow connections sharing one loopback source address (under serve's cap)")
	addrCap := fs.Int("cap", 256, "serve's cap of connections per client address (receiver.DefaultMaxConnsPerIP)")
	overCap := fs.Int("over-cap", 20, "connections one address opens past the cap")
	_ = fs.Parse(args)

	spec := runSpec{Calls: callSpec{shapeLive, int(*rate * hold.Seconds()), 32}, Warm: callSpec{shapeLive, 500, 32}}
	r, srv, err := c.startServe(spec, func(*rig) serveSetup { return serveSetup{} })
	if err != nil {
		return err
	}
	defer r.close()
	calls, warmCalls := r.calls, r.warm
	runLoad(loadSpec{Addr: srv.addr, Path: callbackPath, Calls: warmCalls, Conns: 8})
	if _, _, err := waitDrained(srv.db, false, time.Minute); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	gBefore, err := srv.metric("go_goroutines")
	if err != nil {
		return err
	}
	rssBefore, _, _ := memory(srv.Pid())
	fmt.Printf("before: %.0f goroutines, RSS %s\n", gBefore, mib(rssBefore))
	fmt.Printf("holding %d idle connections, %d slow-header and %d slow-body clients (announcing %s, sent at 1 KiB/s) for %s, with %.0f callbacks/s meanwhile\n",
		*flood, *slowHead, *slowBody, mib(int64(*bodySize)), *hold, *rate)

	sampler := sampleRSS(srv.Pid(), 100*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), *hold)
	defer cancel()
	var wg sync.WaitGroup
	groups := map[string]*slowGroup{}
	idle := func(ctx context.Context, _ net.Conn) { <-ctx.Done() }
	dialed := 0
	for _, g := range []struct {
		name string
		n    int
		play func(ctx context.Context, conn net.Conn)
		from func() net.IP
	}{
		{"idle", *flood, idle, nil},
		{"slow headers", *slowHead, slowHeaders, nil},
		{"slow body", *slowBody, func(ctx context.Context, conn net.Conn) { slowBodyPlay(ctx, conn, *bodySize) }, nil},
		{"one address over the cap", *addrCap + *overCap, idle, func() net.IP { return net.IPv4(127, 2, 0, 1) }},
	} {
		sg := &slowGroup{}
		groups[g.name] = sg
		for range g.n {
			from := net.IPv4(127, 1, byte(dialed / *perAddr / 256), byte(dialed / *perAddr % 256 + 1))
			if g.from != nil {
				from = g.from()
			} else {
				dialed++
			}
			d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: from}}
			conn, err := d.Dial("tcp", srv.addr)
			if err != nil {
				sg.add(0, err)
				continue
			}
			opened := time.Now()
			wg.Go(func() {
				defer conn.Close()
				closed := make(chan time.Duration, 1)
				go func() {
					// The server closing the connection shows as EOF (or a reset) here.
					var first [len("HTTP/1.1 429")]byte
					n, _ := io.ReadFull(conn, first[:])
					if string(first[:n]) == "HTTP/1.1 429" {
						sg.refused()
					}
					_, _ = io.Copy(io.Discard, conn)
					closed <- time.Since(opened)
				}()
				playCtx, stop := context.WithCancel(ctx)
				go func() { g.play(playCtx, conn); stop() }()
				select {
				case d := <-closed:
					stop()
					sg.add(d, nil)
				case <-ctx.Done():
					stop()
					sg.add(-1, nil)
				}
			})
		}
	}
	gPeak := 0.0
	metricsDone := make(chan struct{})
	go func() {
		defer close(metricsDone)
		for ctx.Err() == nil {
			if g, err := srv.metric("go_goroutines"); err == nil {
				gPeak = max(gPeak, g)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	res := runLoad(loadSpec{Addr: srv.addr, Path: callbackPath, Calls: calls, Rate: *rate, Conns: 8, Duration: *hold})
	wg.Wait()
	<-metricsDone
	peak := sampler.stop()
	fmt.Printf("ordinary callbacks meanwhile: %s\n", describeLoad(res))
	var problems findings
	for _, name := range []string{"idle", "slow headers", "slow body", "one address over the cap"} {
		g := groups[name]
		fmt.Printf("%s: %s\n", name, g)
		want := 0
		if name == "one address over the cap" {
			want = *overCap
		}
		if got := g.refusedCount(); got != want {
			problems.add("%s: %d connections answered 429, want %d", name, got, want)
		}
		if g.dialErrs > 0 {
			problems.add("%s: %d connections refused", name, g.dialErrs)
		}
		if *hold >= 65*time.Second && g.open > 0 {
			problems.add("%s: %d connections still open after %s (read timeout 60 s)", name, g.open, *hold)
		}
	}
	// Idle workers of fasthttp's pool are stopped by a sweep every 10 s once idle for 10 s, and
	// closed connections drain for up to 1 s: the count may take up to 21 s to come down.
	var gAfter float64
	var series []string
	for start := time.Now(); time.Since(start) < 30*time.Second; time.Sleep(time.Second) {
		if gAfter, err = srv.metric("go_goroutines"); err != nil {
			return err
		}
		series = append(series, fmt.Sprintf("%.0f@%ds", gAfter, int(time.Since(start).Seconds())))
		if gAfter <= gBefore+10 {
			break
		}
	}
	fmt.Printf("goroutines after the clients left: %s\n", strings.Join(series, " "))
	rssAfter, _, _ := memory(srv.Pid())
	fmt.Printf("goroutines: %.0f before, peak %.0f, %.0f after\n", gBefore, gPeak, gAfter)
	fmt.Printf("memory: RSS before %s, peak %s, after %s (bound %d MiB)\n", mib(rssBefore), mib(peak), mib(rssAfter), *maxRSS)
	if gAfter > gBefore+10 {
		problems.add("goroutines leaked: %.0f before, %.0f after", gBefore, gAfter)
	}
	if peak > int64(*maxRSS)<<20 {
		problems.add("RSS peaked at %s, over %d MiB", mib(peak), *maxRSS)
	}
	if res.OK != res.Sent || res.Sent == 0 {
		problems.add("ordinary callbacks: %d of %d acknowledged (%s)", res.OK, res.Sent, res.statusLine())
	}
	check, err := verifyStore(srv.db, calls, res.Out)
	if err != nil {
		return err
	}
	if _, _, err := waitDrained(srv.db, false, 2*time.Minute); err != nil {
		problems = append(problems, err.Error())
	} else if check, err = verifyStore(srv.db, calls, res.Out); err != nil {
		return err
	}
	problems.check("store", check)
	if err := problems.pass("slow clients", "memory bounded, ordinary callbacks answered, slow connections timed out, no goroutine leaked"); err != nil {
		return err
	}
	return srv.stop()
}

// slowHeaders sends a request line and then one header byte per second, never ending the
// headers.
func slowHeaders(ctx context.Context, conn net.Conn) {
	trickle(ctx, conn, "POST "+callbackPath+" HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ", []byte("a"), -1)
}

// slowBodyPlay announces a body of size bytes to a valid token and sends one KiB per second:
// serve refuses a bad token on the headers alone, so only a holder of a token (or a sender on
// a bad link) can hold a body open, until the read timeout.
func slowBodyPlay(ctx context.Context, conn net.Conn, size int) {
	head := fmt.Sprintf("POST "+callbackPath+" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", size)
	chunk := []byte(strings.Repeat("x", 1024))
	// As many whole KiB as leave the body unfinished: the server must never get all of it.
	trickle(ctx, conn, head, chunk, max(0, (size-1)/len(chunk)))
}

// trickle writes head, then piece once a second, n times (n < 0: until ctx ends or a write
// fails), the way a slow client holds a connection open without ever finishing its request.
func trickle(ctx context.Context, conn net.Conn, head string, piece []byte, n int) {
	if _, err := io.WriteString(conn, head); err != nil {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for i := 0; n < 0 || i < n; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := conn.Write(piece); err != nil {
				return
			}
		}
	}
}

// slowGroup collects how a group of slow connections ended.
type slowGroup struct {
	mu       sync.Mutex
	closedIn []time.Duration // connections the server closed, after how long
	open     int             // still open when the hold ended
	n429     int             // connections answered 429 (over their address's cap)
	dialErrs int
	firstErr error
}

func (g *slowGroup) add(d time.Duration, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case err != nil:
		g.dialErrs++
		if g.firstErr == nil {
			g.firstErr = err
		}
	case d < 0:
		g.open++
	default:
		g.closedIn = append(g.closedIn, d)
	}
}

func (g *slowGroup) refused() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n429++
}

func (g *slowGroup) refusedCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n429
}

func (g *slowGroup) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := fmt.Sprintf("%d closed by serve (after %s), %d still open at the end", len(g.closedIn), summarise(g.closedIn), g.open)
	if g.n429 > 0 {
		s += fmt.Sprintf(", %d answered 429", g.n429)
	}
	if g.dialErrs > 0 {
		s += fmt.Sprintf(", %d refused (%v)", g.dialErrs, g.firstErr)
	}
	return s
}
