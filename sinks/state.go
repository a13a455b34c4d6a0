package sinks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/scribehook/scribehook/store"
)

// DefaultStateInterval is how often a running dispatcher reads the sinks' states again, so
// that a sink enabled or disabled by another process (scribehook sinks enable, another
// replica's 410) follows within it.
const DefaultStateInterval = 5 * time.Second

// ErrUnknownSink is returned by Enable and Disable for a name the dispatcher has no sink of.
var ErrUnknownSink = errors.New("no such sink")

// Enable resumes a disabled sink: its queued deliveries are claimed at once. The state is
// recorded first, so an enabling that cannot be recorded changes nothing.
func (d *Dispatcher) Enable(ctx context.Context, name string) error {
	return d.setState(ctx, store.SinkState{Name: name, Since: d.now()})
}

// Disable stops a sink until Enable: nothing more is claimed for it, its deliveries stay
// queued, attempts in flight finish.
func (d *Dispatcher) Disable(ctx context.Context, name, reason string) error {
	return d.setState(ctx, store.SinkState{Name: name, Disabled: true, Reason: reason, Since: d.now()})
}

func (d *Dispatcher) setState(ctx context.Context, st store.SinkState) error {
	d.mu.Lock()
	w := d.byName[st.Name]
	d.mu.Unlock()
	if w == nil {
		return fmt.Errorf("sink %q: %w", st.Name, ErrUnknownSink)
	}
	if d.states != nil {
		if err := d.states.SetSinkState(ctx, st); err != nil {
			return fmt.Errorf("record the state of sink %q: %w", st.Name, err)
		}
	}
	w.applyState(st, 0, stateCalled)
	return nil
}

// loadStates applies the recorded states to the sinks. A sink without a record is enabled
// (an enabling recorded by removing the row, or never disabled). A failed read is logged and
// changes nothing: the sinks keep the state they had.
func (d *Dispatcher) loadStates(ctx context.Context) {
	if d.states == nil {
		return
	}
	workers := d.workerList()
	// The generations before the read: a change made in this process while the read runs (a
	// 410 disabling the sink before its record is committed) is newer than what is read.
	gens := make([]uint64, len(workers))
	for i, w := range workers {
		gens[i] = w.generation()
	}
	ctx, cancel := context.WithTimeout(ctx, queueTimeout)
	defer cancel()
	states, err := d.states.SinkStates(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.log.WithError(err).Error("sinks: reading the sinks' states failed; they keep the state they had")
		}
		return
	}
	byName := make(map[string]store.SinkState, len(states))
	for _, st := range states {
		byName[st.Name] = st
	}
	for i, w := range workers {
		st, ok := byName[w.name]
		if !ok {
			st = store.SinkState{Name: w.name}
		}
		w.applyState(st, gens[i], stateRead)
	}
}

// followStates reads the states every interval (on the dispatcher's timer) until ctx ends.
func (d *Dispatcher) followStates(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.after(d.stateEvery):
		}
		d.loadStates(ctx)
	}
}

// generation is the worker's count of state changes made in this process.
func (w *sinkWorker) generation() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stateGen
}

// stateSource says where a state applied to a worker comes from.
type stateSource int

const (
	stateCalled stateSource = iota // Enable or Disable, recorded before
	stateRead                      // a read of DispatcherConfig.States
	stateGone                      // the destination's 410, recorded after
)

// applyState makes the worker disabled or enabled as st says, logging and waking it on a
// change. A state read from the store applies only if nothing changed the worker's state in
// this process since gen, taken before the read, and no 410 is being recorded: the store then
// has that change recorded, or is about to, and the next read brings it.
func (w *sinkWorker) applyState(st store.SinkState, gen uint64, from stateSource) {
	w.mu.Lock()
	if from == stateRead && (w.stateGen != gen || w.recording > 0) {
		w.mu.Unlock()
		return
	}
	if from != stateRead {
		w.stateGen++
	}
	changed := w.disabled != st.Disabled
	w.disabled = st.Disabled
	if st.Disabled {
		w.disabledReason = st.Reason
	} else {
		w.disabledReason = ""
	}
	w.mu.Unlock()
	if !changed {
		return
	}
	if w.d.onState != nil {
		st.Name = w.name
		w.d.onState(st)
	}
	if st.Disabled {
		w.d.m.disabled.WithLabelValues(w.name).Set(1)
		log := w.log.WithField("reason", st.Reason)
		if from == stateGone {
			// Nobody decided it here: someone has to enable the sink again.
			log.Error("sinks: sink disabled: its destination is gone; its queue waits until it is enabled again (scribehook sinks enable)")
			return
		}
		log.Warn("sinks: sink disabled; its deliveries wait in its queue until it is enabled")
		return
	}
	w.d.m.disabled.WithLabelValues(w.name).Set(0)
	w.log.Info("sinks: sink enabled")
	w.poke()
}

// disable stops the sink until it is enabled again: its destination answered that it is gone
// (HTTP 410). The state is also recorded in DispatcherConfig.States, so a restart does not enable it; a
// failure to record it is logged: the sink is disabled in this process all the same.
func (w *sinkWorker) disable(reason string) {
	st := store.SinkState{Name: w.name, Disabled: true, Reason: reason, Since: w.d.now()}
	// Disabled here first: no more attempts are claimed while the state is being recorded. A
	// read of the states until the record is written does not have it and would enable the
	// sink again: such a read applies nothing while recording, and one that ends after it is
	// older than the generation it ends with.
	w.mu.Lock()
	w.recording++
	w.mu.Unlock()
	w.applyState(st, 0, stateGone)
	var err error
	if w.d.states != nil {
		ctx, cancel := context.WithTimeout(context.Background(), queueTimeout)
		err = w.d.states.SetSinkState(ctx, st)
		cancel()
	}
	w.mu.Lock()
	w.recording--
	w.stateGen++
	w.mu.Unlock()
	if err != nil {
		w.log.WithError(err).Error("sinks: recording the disabled state failed; the sink will be enabled again at the next start")
	}
}
