package main

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The sustained rate of one webhook sink (fanout -sustain): callbacks are offered at rising
// rates, one step each; a step is followed when serve acknowledged what was offered and the
// webhook received events at the offered rate over the step's settled part (its last 60 %: the
// first events of a step arrive a latency after it starts), with at most a second's worth of
// events still undelivered at its end.
// The run stops after the first step not followed, waits for every event, and reports the
// highest rate followed, the most events a second the webhook received in one step, and the
// rate at which the backlog then drained (the sink's ceiling when it is the bottleneck).

// Thresholds of a followed step: 95 % of the rate acknowledged, 90 % delivered over the settled
// part, and at most a second's worth of events still undelivered at its end.
const (
	followAcked     = 0.95
	followDelivered = 0.90
	followBacklog   = time.Second
	settledFrom     = 0.4 // the settled part starts this share of the step in
)

// stepFigures are one step's figures.
type stepFigures struct {
	rate      float64
	acked     int
	elapsed   time.Duration
	settled   time.Duration // the settled part's length
	delivered int           // first arrivals within the settled part
	behind    int           // acknowledged so far and not yet arrived, at the step's end
	lat       latencies
	followed  bool
}

func (s stepFigures) ackRate() float64     { return float64(s.acked) / s.elapsed.Seconds() }
func (s stepFigures) deliverRate() float64 { return float64(s.delivered) / s.settled.Seconds() }

func (s stepFigures) String() string {
	verdict := "followed"
	if !s.followed {
		verdict = "NOT followed"
		if s.ackRate() < followAcked*s.rate {
			verdict += " (the acknowledgments did not follow)"
		}
	}
	return fmt.Sprintf("%5.0f/s offered: acked %5.0f/s, delivered %5.0f/s (last %.0f%%), %d behind at the end; receipt → webhook, those arrivals: %s: %s",
		s.rate, s.ackRate(), s.deliverRate(), 100*(1-settledFrom), s.behind, s.lat, verdict)
}

// sustained is what a ramp found.
type sustained struct {
	steps []stepFigures
	sent  int // calls sent, a prefix of the run's calls
	began time.Time
}

// rampLoad offers calls at each rate of ladder for step, in order, until a step is not
// followed; the result holds every call, those not sent marked so.
func rampLoad(addr string, calls []callback, ladder []float64, step time.Duration, conns int, hook *hookReceiver) (loadResult, sustained) {
	out := make([]outcome, len(calls))
	ramp := sustained{began: time.Now()}
	acked := 0
	for _, rate := range ladder {
		n := stepCalls(rate, step)
		from := time.Now()
		res := runLoad(loadSpec{Addr: addr, Path: callbackPath, Calls: calls[ramp.sent : ramp.sent+n], Rate: rate, Conns: conns})
		to := time.Now()
		copy(out[ramp.sent:], res.Out)
		ramp.sent += n
		acked += res.OK
		st := hook.stats()
		f := stepFigures{rate: rate, acked: res.OK, elapsed: to.Sub(from), behind: acked - len(st.Lat)}
		settled := from.Add(time.Duration(settledFrom * float64(f.elapsed)))
		f.settled = to.Sub(settled)
		var lat []time.Duration
		for i, at := range st.LatAt {
			if !at.Before(settled) && at.Before(to) {
				f.delivered++
				lat = append(lat, st.Lat[i])
			}
		}
		f.lat = summarise(lat)
		f.followed = f.ackRate() >= followAcked*rate && f.deliverRate() >= followDelivered*rate &&
			float64(f.behind) <= max(100, rate*followBacklog.Seconds())
		fmt.Printf("step %s\n", f)
		ramp.steps = append(ramp.steps, f)
		if !f.followed {
			break
		}
	}
	elapsed := time.Since(ramp.began)
	return loadResult{Out: out, loadTotals: tally(len(out), func(i int) *outcome { return &out[i] }, elapsed)}, ramp
}

// report prints the ramp's verdict once every event arrived (st), drained after the last
// step's end.
func (r sustained) report(st hookStats, drained time.Duration) {
	var best, peak stepFigures
	for _, s := range r.steps {
		if s.followed {
			best = s
		}
		if s.deliverRate() > peak.deliverRate() || peak.elapsed == 0 {
			peak = s
		}
	}
	last := r.steps[len(r.steps)-1]
	drainRate := 0.0
	if last.behind > 0 && drained > 0 {
		drainRate = float64(last.behind) / drained.Seconds()
	}
	highest := "none"
	if best.elapsed > 0 {
		highest = fmt.Sprintf("%.0f/s (delivered %.0f events/s, p99 %s)", best.rate, best.deliverRate(), ms(best.lat.P99))
	}
	fmt.Printf("sustain: highest rate followed %s; most delivered in a step %.0f events/s (at %.0f/s offered); the last step's backlog of %d drained at %.0f events/s\n",
		highest, peak.deliverRate(), peak.rate, last.behind, drainRate)
	figures(fmt.Sprintf("one webhook sink, sustained: %s; peak %.0f events/s delivered in a step, backlog drained at %.0f events/s; %d events signed and verified, %d ids delivered more than once, %d bad signatures   [target ≥ 3,000 events/s]",
		highest, peak.deliverRate(), drainRate, st.Distinct, st.Dups, st.Bad))
}

// stepCalls is how many calls a step of rate for step offers.
func stepCalls(rate float64, step time.Duration) int {
	return max(1, int(math.Round(rate*step.Seconds())))
}

// parseRates reads -rates: positive numbers, rising.
func parseRates(s string) ([]float64, error) {
	var out []float64
	for f := range strings.SplitSeq(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 || (len(out) > 0 && v <= out[len(out)-1]) {
			return nil, fmt.Errorf("-rates %q: positive rates per second, rising, separated by commas", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// orderCheck is the verdict on the order in which an ordered sink delivered each session.
type orderCheck struct {
	Sessions, Events, OutOfOrder int
	Example                      string
}

func (c orderCheck) ok() bool { return c.OutOfOrder == 0 }

func (c orderCheck) String() string {
	s := fmt.Sprintf("%d events of %d sessions, %d arrived before an event stored earlier in their session", c.Events, c.Sessions, c.OutOfOrder)
	if c.Example != "" {
		s += "; e.g. " + c.Example
	}
	return s
}

// checkOrder compares the order in which each session's messages first arrived at the webhook
// (ranks, by message key) with their order in serve's store (live_messages.seq).
func checkOrder(dbPath string, calls []callback, ranks map[string]int) (orderCheck, error) {
	var c orderCheck
	keyOf := make(map[string]string, len(calls))
	for _, cl := range calls {
		if cl.MsgKey != "" {
			keyOf[cl.DedupeKey] = cl.MsgKey
		}
	}
	db, err := openReadOnly(dbPath)
	if err != nil {
		return c, err
	}
	defer db.Close()
	session, prev := "", -1
	err = eachRow(context.Background(), db, "read the stored order", func(rows *sql.Rows) error {
		var sid, dedupe string
		var seq int64
		if err := rows.Scan(&sid, &seq, &dedupe); err != nil {
			return err
		}
		rank, arrived := ranks[keyOf[dedupe]]
		if !arrived {
			return nil // the warm-up's, or not a measured call
		}
		if sid != session {
			session, prev = sid, -1
			c.Sessions++
		}
		c.Events++
		if rank < prev {
			c.OutOfOrder++
			if c.Example == "" {
				c.Example = fmt.Sprintf("session %s: seq %d arrived %d places early", sid, seq, prev-rank)
			}
		}
		prev = max(prev, rank)
		return nil
	}, `SELECT l.session_id, l.seq, i.dedupe_key
		FROM live_messages l JOIN inbox i ON i.id = l.inbox_id ORDER BY l.session_id, l.seq`)
	return c, err
}
