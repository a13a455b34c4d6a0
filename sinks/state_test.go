package sinks_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/testmetrics"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
)

// dispStateOf reads the sink's recorded state from the store; ok is false when it has none.
func dispStateOf(t *testing.T, e *dispEnv, name string) (store.SinkState, bool) {
	t.Helper()
	sts, err := e.store.SinkStates(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(sts, func(s store.SinkState) bool { return s.Name == name })
	if i < 0 {
		return store.SinkState{}, false
	}
	return sts[i], true
}

// TestDispatchDisabledAcrossRestart: a sink disabled by a 410 stays disabled when the process
// restarts (its state is in the store), its other deliveries stay queued, and Enable delivers
// them.
func TestDispatchDisabledAcrossRestart(t *testing.T) {
	e := newDispEnv(t)
	gone := newDispSink("hook", func(context.Context, api.Event, int) error {
		return &sinks.Failure{Err: errors.New("410 Gone"), Disable: true}
	})
	e.enqueue("hook", "e1", "e2", "e3")
	spec := []sinks.Spec{{Name: "hook", Concurrency: 1}}
	d := e.run(sinks.DispatcherConfig{Queue: e.store, States: e.store}, spec, gone)
	testwait.For(t, "the sink disabled", dispWait, func() bool { return dispStats(t, d, "hook").Disabled })
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if st, ok := dispStateOf(t, e, "hook"); !ok || !st.Disabled || st.Reason != "sink disabled: 410 Gone" || !st.Since.Equal(dispT0) {
		t.Fatalf("recorded state %+v (%v), want disabled with the 410's reason at %v", st, ok, dispT0)
	}

	// The restart: a new process on the same database, the destination back.
	e.open()
	e.reg = prometheus.NewRegistry()
	back := newDispSink("hook", nil)
	d = e.run(sinks.DispatcherConfig{Queue: e.store, States: e.store}, spec, back)
	e.advance(d, time.Hour)
	dispStill(t, back, 0, "a sink disabled before the restart")
	if st := dispStats(t, d, "hook"); !st.Disabled || st.DisabledReason != "sink disabled: 410 Gone" || st.Depth != 2 {
		t.Errorf("stats after the restart = %+v, want disabled with 2 queued", st)
	}
	if v := testmetrics.Value(t, e.reg, "scribehook_sink_disabled", "sink", "hook"); v != 1 {
		t.Errorf("disabled gauge after the restart = %g, want 1", v)
	}

	if err := d.Enable(t.Context(), "hook"); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the queued deliveries delivered", dispWait, func() bool { return len(back.done()) == 2 })
	if got := back.done(); !slices.Equal(got, []string{"e2", "e3"}) {
		t.Errorf("delivered %v, want e2 e3", got)
	}
	if st, ok := dispStateOf(t, e, "hook"); !ok || st.Disabled || st.Reason != "" {
		t.Errorf("recorded state after Enable %+v (%v), want enabled", st, ok)
	}
	if v, listed := testmetrics.Series(t, e.reg, "scribehook_sink_disabled", "sink", "hook"); v != 0 || !listed {
		t.Errorf("disabled gauge after Enable = %g (listed %v), want 0", v, listed)
	}
}

// followUntil waits for cond as testwait.For does, moving the clock by dispStateInterval (the
// StateInterval of the tests that follow the recorded states) before each look, so that the
// dispatcher's follower reads the states again.
func (e *dispEnv) followUntil(what string, cond func() bool) {
	e.t.Helper()
	testwait.For(e.t, what, dispWait, func() bool {
		e.clock.Advance(dispStateInterval)
		return cond()
	})
}

const dispStateInterval = 10 * time.Millisecond

// TestDispatchFollowsRecordedState: a state recorded by another process (an operator's
// scribehook sinks disable and enable) reaches a running dispatcher within StateInterval of
// its clock.
func TestDispatchFollowsRecordedState(t *testing.T) {
	e := newDispEnv(t)
	sink := newDispSink("hook", nil)
	d := e.run(sinks.DispatcherConfig{Queue: e.store, States: e.store, StateInterval: dispStateInterval},
		[]sinks.Spec{{Name: "hook"}}, sink)
	if err := e.store.SetSinkState(t.Context(), store.SinkState{Name: "hook", Disabled: true, Reason: "maintenance"}); err != nil {
		t.Fatal(err)
	}
	e.followUntil("the sink disabled", func() bool { return dispStats(t, d, "hook").Disabled })
	if st := dispStats(t, d, "hook"); st.DisabledReason != "maintenance" {
		t.Errorf("reason %q, want the operator's", st.DisabledReason)
	}
	e.enqueue("hook", "e1")
	e.advance(d, time.Minute)
	dispStill(t, sink, 0, "a sink disabled by an operator")
	if err := e.store.SetSinkState(t.Context(), store.SinkState{Name: "hook"}); err != nil {
		t.Fatal(err)
	}
	e.followUntil("the delivery after enabling", func() bool { return len(sink.done()) == 1 })
	if err := d.Disable(t.Context(), "nope", "x"); !errors.Is(err, sinks.ErrUnknownSink) {
		t.Errorf("Disable of an unknown sink: %v, want ErrUnknownSink", err)
	}
}

// gatedStates is the store's sink queue whose reads of the sinks' states can be held: the
// test takes a read's snapshot, changes the state in between, then lets the read finish.
type gatedStates struct {
	states  store.SinkStateStore
	armed   chan struct{} // closed: the next read is held
	read    chan struct{} // closed once the held read has its snapshot
	release chan struct{} // closed: the held read returns its snapshot
	once    bool
	reads   atomic.Int64 // reads finished
	// recording, when set, is closed once a SetSinkState has begun; every SetSinkState then
	// waits for recorded to be closed before it writes.
	recording, recorded chan struct{}
	recordingOnce       sync.Once
}

func (g *gatedStates) SetSinkState(ctx context.Context, st store.SinkState) error {
	if g.recording != nil {
		g.recordingOnce.Do(func() { close(g.recording) })
		<-g.recorded
	}
	return g.states.SetSinkState(ctx, st)
}

func (g *gatedStates) SinkStates(ctx context.Context) ([]store.SinkState, error) {
	sts, err := g.states.SinkStates(ctx)
	defer g.reads.Add(1)
	select {
	case <-g.armed:
		if !g.once {
			g.once = true // only followStates reads, one read at a time
			close(g.read)
			<-g.release
		}
	default:
	}
	return sts, err
}

// TestDispatchStaleStateReadKeeps410: a periodic read of the recorded states that began
// before a 410 disabled the sink (so it still says "enabled") does not enable the sink again:
// its next deliveries stay queued instead of being claimed, refused with 410 and dead-lettered.
func TestDispatchStaleStateReadKeeps410(t *testing.T) {
	e := newDispEnv(t)
	g := &gatedStates{states: e.store, armed: make(chan struct{}),
		read: make(chan struct{}), release: make(chan struct{})}
	gone := newDispSink("hook", func(context.Context, api.Event, int) error {
		return &sinks.Failure{Err: errors.New("410 Gone"), Disable: true}
	})
	spec := []sinks.Spec{{Name: "hook", Concurrency: 1}}
	d := e.run(sinks.DispatcherConfig{Queue: e.store, States: g, StateInterval: dispStateInterval}, spec, gone)
	released := sync.OnceFunc(func() { close(g.release) })
	t.Cleanup(released) // a failing test must not leave Run held
	// Run's first read is behind it and its workers run: the periodic reads follow.
	e.followUntil("two reads of the states", func() bool { return g.reads.Load() >= 2 })

	close(g.armed)
	// A read has its snapshot: no state recorded, the sink enabled.
	e.followUntil("a read held", func() bool {
		select {
		case <-g.read:
			return true
		default:
			return false
		}
	})
	e.enqueue("hook", "e1", "e2")
	e.advance(d, 0)
	testwait.For(t, "the sink disabled by the 410", dispWait, func() bool { return dispStats(t, d, "hook").Disabled })
	reads := g.reads.Load()
	released() // the stale read applies its snapshot now
	// Several more reads, which bring the recorded 410.
	e.followUntil("more reads of the states", func() bool { return g.reads.Load() >= reads+3 })
	wantKept410(t, e, d, gone, "a sink disabled by a 410 while a state read was under way")
}

// wantKept410 checks that hook, whose 410 for e1 disabled it, stayed disabled an hour later:
// gone was tried once, e1 is the only dead letter and e2 waits in the queue.
func wantKept410(t *testing.T, e *dispEnv, d *sinks.Dispatcher, gone *dispSink, why string) {
	t.Helper()
	e.advance(d, time.Hour)
	dispStill(t, gone, 1, why)
	if st := dispStats(t, d, "hook"); !st.Disabled || st.Depth != 1 {
		t.Errorf("stats = %+v, want disabled with e2 queued", st)
	}
	if dl := e.deadLetters("hook"); len(dl) != 1 || dl[0].EventID != "e1" {
		t.Errorf("dead letters %+v, want only e1 (the 410 itself)", dl)
	}
}

// TestDispatchReadWhileRecording410Keeps410: a periodic read of the recorded states that runs
// after a 410 disabled the sink but before its state is written (so it still says "enabled")
// does not enable the sink again.
func TestDispatchReadWhileRecording410Keeps410(t *testing.T) {
	e := newDispEnv(t)
	g := &gatedStates{states: e.store, recording: make(chan struct{}), recorded: make(chan struct{})}
	gone := newDispSink("hook", func(context.Context, api.Event, int) error {
		return &sinks.Failure{Err: errors.New("410 Gone"), Disable: true}
	})
	d := e.run(sinks.DispatcherConfig{Queue: e.store, States: g, StateInterval: dispStateInterval}, []sinks.Spec{{Name: "hook", Concurrency: 1}}, gone)
	recorded := sync.OnceFunc(func() { close(g.recorded) })
	t.Cleanup(recorded) // a failing test must not leave the attempt held
	e.followUntil("two reads of the states", func() bool { return g.reads.Load() >= 2 })

	e.enqueue("hook", "e1", "e2")
	e.advance(d, 0)
	testwait.For(t, "the 410 being recorded", dispWait, func() bool {
		select {
		case <-g.recording:
			return true
		default:
			return false
		}
	})
	reads := g.reads.Load()
	e.followUntil("reads while the 410 is recorded", func() bool { return g.reads.Load() >= reads+3 })
	if st := dispStats(t, d, "hook"); !st.Disabled {
		t.Errorf("stats while the 410 is recorded = %+v, want disabled", st)
	}
	recorded()
	e.followUntil("reads after the 410 is recorded", func() bool { return g.reads.Load() >= reads+6 })
	wantKept410(t, e, d, gone, "a sink disabled by a 410 while state reads ran")
}
