package scribehook

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
)

// SinkStatus is one sink as an operator sees it: whether the configuration names it (or the
// program registered it), what was decided about it (a 410 Gone, or an operator), and how many
// deliveries wait in its queue. Its JSON form is what `scribehook sinks list -o json` prints.
type SinkStatus struct {
	Name string `json:"name"`
	// Kind is the configured kind, KindGo for an event handler, a custom sink's Spec.Kind; ""
	// for a name only the store knows.
	Kind string `json:"kind,omitempty"`
	// Configured is false for a sink the configuration does not name: an event handler or a
	// sink of the program's own, or one removed from the configuration (or renamed) whose
	// recorded state or queue outlives it, and which can still be enabled.
	Configured bool `json:"configured"`
	// Registered is true for an event handler or sink the program gave the kit (WithEventHandler,
	// WithSink). Only Kit.SinkStatuses knows them; SinkStatuses, which reads the configuration
	// and the store, lists their queues with Registered false.
	Registered bool      `json:"registered,omitempty"`
	Disabled   bool      `json:"disabled"`
	Reason     string    `json:"reason,omitempty"`
	Since      time.Time `json:"since,omitzero"`
	// Queued counts its deliveries neither delivered nor dead.
	Queued int64 `json:"queued"`
}

// Orphaned reports queued deliveries for a sink that is neither configured nor registered: a
// handler renamed or a sink removed left them under the old name, where nothing delivers them.
// (From SinkStatuses, which knows no Go code, an event handler's queue looks orphaned too.)
func (s SinkStatus) Orphaned() bool { return !s.Configured && !s.Registered && s.Queued > 0 }

// SinkStatuses lists the sinks cfg configures, every sink with a recorded state, and every
// queue the store holds deliveries in (an event handler's, or one a rename left behind), by
// name, each with its queue. It only reads the store, so it answers beside a running serve
// (PostgreSQL, or SQLite on the same machine). Kit.SinkStatuses knows the program's event
// handlers and sinks too.
func SinkStatuses(ctx context.Context, cfg configs.Config, st store.Store) ([]SinkStatus, error) {
	return sinkStatuses(ctx, cfg, nil, st)
}

// SinkStatuses is the package's SinkStatuses with the event handlers and sinks the program
// gave this kit marked Registered, with their kind: what is left Orphaned is a queue nothing
// here delivers.
func (k *Kit) SinkStatuses(ctx context.Context) ([]SinkStatus, error) {
	return sinkStatuses(ctx, k.cfg, k.registered, k.store)
}

func sinkStatuses(ctx context.Context, cfg configs.Config, registered []sinks.Spec, st store.Store) ([]SinkStatus, error) {
	all, err := knownSinks(ctx, cfg, registered, st)
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

// warnOrphanedQueues logs each queue nothing configured or registered delivers, at Start:
// after a handler's rename its events would otherwise wait unseen.
func (k *Kit) warnOrphanedQueues(ctx context.Context) {
	all, err := k.SinkStatuses(ctx)
	if err != nil {
		k.log.WithError(err).Warn("could not list the sink queues to look for orphaned ones")
		return
	}
	for _, s := range all {
		if s.Orphaned() {
			k.log.WithFields(logrus.Fields{"sink": s.Name, "queued": s.Queued}).
				Warn("deliveries queued for a sink neither configured nor registered (renamed or removed?): nothing delivers them until a sink or handler of that name is back")
		}
	}
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
	all, err := knownSinks(ctx, cfg, nil, st)
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
	if all, err = knownSinks(ctx, cfg, nil, st); err != nil {
		return SinkStatus{}, err
	}
	s := all[slices.IndexFunc(all, named(state.Name))]
	return s, s.readQueue(ctx, st)
}

func named(name string) func(SinkStatus) bool {
	return func(s SinkStatus) bool { return s.Name == name }
}

// knownSinks is SinkStatuses without the queue depths: the configured sinks, the registered
// ones, the recorded states and the names of the queues the store holds (when it lists them,
// store.SinkQueues), merged by name and sorted.
func knownSinks(ctx context.Context, cfg configs.Config, registered []sinks.Spec, st store.Store) ([]SinkStatus, error) {
	states, err := st.SinkStates(ctx)
	if err != nil {
		return nil, fmt.Errorf("read sink states: %w", err)
	}
	var queues map[string]int64
	if sq, ok := st.(store.SinkQueues); ok {
		if queues, err = sq.SinkQueues(ctx); err != nil {
			return nil, fmt.Errorf("list sink queues: %w", err)
		}
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
		r := status(s.Name)
		r.Configured, r.Kind = true, s.Kind
	}
	for _, s := range registered {
		r := status(s.Name)
		r.Registered, r.Kind = true, s.Kind
	}
	for name := range queues {
		status(name)
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
