package sinktest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/sinks/sinktest"
)

// shelf is a sink of a program's own: it keeps each event's JSON in memory, as a table or a
// queue of the program's would. Its test (sinktest_test.go) is one call:
//
//	func TestShelf(t *testing.T) {
//		sinktest.Run(t, sinktest.Features{ExactBytes: true}, openShelf)
//	}
type shelf struct {
	name    string
	mu      sync.Mutex
	events  [][]byte
	down    bool          // the destination fails
	stalled chan struct{} // not nil: the destination never answers
}

func (s *shelf) Name() string { return s.name }

func (s *shelf) Deliver(ctx context.Context, ev api.Event) error {
	b, err := api.EncodeEvent(&ev, false)
	if err != nil {
		return &sinks.Failure{Err: fmt.Errorf("encode event: %w", err), Permanent: true} // never deliverable
	}
	s.mu.Lock()
	down, stalled := s.down, s.stalled
	s.mu.Unlock()
	if stalled != nil {
		select { // the destination hangs: give up with the context
		case <-stalled:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil {
		return err // retried: the attempt ran out of time
	}
	if down {
		return errors.New("shelf is down") // retried on the schedule
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, b)
	return nil
}

func (s *shelf) Close() error { return nil }

// openShelf is what the suite needs of the shelf: the sink, what it holds, and a way to make
// it fail and hang.
func openShelf(t *testing.T, name string) sinktest.Destination {
	s := &shelf{name: name}
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return sinktest.Destination{
		Sink: s,
		Received: func(*testing.T) [][]byte {
			s.mu.Lock()
			defer s.mu.Unlock()
			return append([][]byte(nil), s.events...)
		},
		Break: func(*testing.T) { s.mu.Lock(); s.down = true; s.mu.Unlock() },
		Stall: func(*testing.T) { s.mu.Lock(); s.stalled = release; s.mu.Unlock() },
	}
}

// The events the suite delivers, one of each type the pipeline publishes, with the data it
// gives them: a sink's own tests can use them too.
func ExampleEvents() {
	s := &shelf{name: "shelf"}
	for _, ev := range sinktest.Events("example") {
		if err := s.Deliver(context.Background(), ev); err != nil {
			panic(err)
		}
		fmt.Println(ev.Type, ev.ID)
	}
	fmt.Println(len(s.events), "events on the shelf")
	// Output:
	// job.created example-0001
	// job.succeeded example-0002
	// subtitles.ready example-0003
	// job.failed example-0004
	// live.transcript example-0005
	// 5 events on the shelf
}
