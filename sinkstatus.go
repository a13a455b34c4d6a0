package scribehook

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/store"
)

// SinkStatus is one sink as an operator sees it: whether the configuration names it, what
// was decided about it (a 410 Gone, or an operator), and how many deliveries wait in its
// queue. Its JSON form is what `scribehook sinks list -o json` prints.
type SinkStatus struct {
	Name string `json:"name"`
	// Configured is false for a sink with a recorded state that the configuration no longer
	// names: its state and its queue outlive it, and it can still be enabled.
	Configured bool      `json:"configured"`
	Disabled   bool      `json:"disabled"`
	Reason     string    `json:"reason,omitempty"`
	Since      time.Time `json:"since,omitzero"`
	// Queued counts its deliveries neither delivered nor dead.
	Queued int64 `json:"queued"`
}

// SinkStatuses lists the sinks cfg configures and every sink with a recorded state, by name,
// each with its queue. It only reads the store, so it answers beside a running serve
// (PostgreSQL, or SQLite on the same machine).
func SinkStatuses(ctx context.Context, cfg configs.Config, st store.Store) ([]SinkStatus, error) {
	all, err := knownSinks(ctx, cfg, st)
	if err != nil {
		return nil, err
	}
	for i := range all {
		if err := all[i].readQueue(ctx, st); err != nil {
			return nil, err
		}
	}
	return all, nil
}

// UnknownSinkError is SetSinkState's answer for a name that is neither configured nor
// recorded: a typo would otherwise record a state that no sink ever reads.
type UnknownSinkError struct {
	Name string
	// Known are the sinks that could be named, by name.
	Known []string
}

func (e *UnknownSinkError) Error() string {
	return fmt.Sprintf("no sink %q in the configuration (sinks: %s)", e.Name, strings.Join(e.Known, ", "))
}

// SetSinkState records state (disabled with a reason, or enabled again) for a sink cfg
// configures or one with a recorded state (a sink since removed from the configuration can
// still be enabled), and returns that sink's status after it; any other name is an
// *UnknownSinkError. The store keeps the state across restarts; a running dispatcher follows
// it within sinks.DefaultStateInterval.
func SetSinkState(ctx context.Context, cfg configs.Config, st store.Store, state store.SinkState) (SinkStatus, error) {
	all, err := knownSinks(ctx, cfg, st)
	if err != nil {
		return SinkStatus{}, err
	}
	if !slices.ContainsFunc(all, named(state.Name)) {
		names := make([]string, len(all))
		for i, s := range all {
			names[i] = s.Name
		}
		return SinkStatus{}, &UnknownSinkError{Name: state.Name, Known: names}
	}
	if err := st.SetSinkState(ctx, state); err != nil {
		return SinkStatus{}, err // the store's error names the sink
	}
	// Read it back: the store gives the time of the change, and now holds the sink's state.
	if all, err = knownSinks(ctx, cfg, st); err != nil {
		return SinkStatus{}, err
	}
	s := all[slices.IndexFunc(all, named(state.Name))]
	return s, s.readQueue(ctx, st)
}

func named(name string) func(SinkStatus) bool {
	return func(s SinkStatus) bool { return s.Name == name }
}

// knownSinks is SinkStatuses without the queues: the configured sinks and the recorded
// states, merged by name and sorted.
func knownSinks(ctx context.Context, cfg configs.Config, st store.Store) ([]SinkStatus, error) {
	states, err := st.SinkStates(ctx)
	if err != nil {
		return nil, fmt.Errorf("read sink states: %w", err)
	}
	var all []SinkStatus
	at := map[string]int{}
	status := func(name string) *SinkStatus {
		i, ok := at[name]
		if !ok {
			i = len(all)
			at[name] = i
			all = append(all, SinkStatus{Name: name})
		}
		return &all[i]
	}
	for _, s := range cfg.Sinks {
		status(s.Name).Configured = true
	}
	for _, s := range states {
		r := status(s.Name)
		r.Disabled, r.Reason, r.Since = s.Disabled, s.Reason, s.Since
	}
	slices.SortFunc(all, func(a, b SinkStatus) int { return strings.Compare(a.Name, b.Name) })
	return all, nil
}

func (s *SinkStatus) readQueue(ctx context.Context, st store.Store) error {
	n, err := st.SinkDepth(ctx, s.Name)
	if err != nil {
		return fmt.Errorf("read the queue of sink %s: %w", s.Name, err)
	}
	s.Queued = n
	return nil
}
