package sinks

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/sinks/sinkkind"
)

type queueSink struct{ name string }

var registerTestQueue sync.Once

func (q queueSink) Name() string                           { return q.name }
func (queueSink) Deliver(context.Context, api.Event) error { return nil }
func (queueSink) Close() error                             { return nil }

// A kind of another module is one RegisterKind call: New builds it, the configuration lists it
// after the module's own.
func TestRegisterKind(t *testing.T) {
	// Once per process: a kind is registered once, as a package's init does, and -count=N
	// runs the test N times.
	registerTestQueue.Do(func() {
		RegisterKind(Kind{
			Kind: sinkkind.Kind{Name: "test-queue"},
			New:  func(spec Spec, _ Deps) (Sink, error) { return queueSink{spec.Name}, nil },
		})
	})
	if got := Kinds(); !slices.Equal(got, []string{KindFile, KindWebhook, KindLog, "test-queue"}) {
		t.Errorf("Kinds() = %q", got)
	}
	s, err := New(Spec{Name: "q", Kind: "test-queue"}, Deps{Logger: logx.Discard()})
	if err != nil || s.Name() != "q" {
		t.Fatalf("New(test-queue) = %v, %v", s, err)
	}
	if _, err := New(Spec{Name: "q", Kind: "kafka"}, Deps{}); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("New(kafka) = %v, want ErrUnknownKind", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("RegisterKind without a constructor did not panic")
		}
	}()
	RegisterKind(Kind{Kind: sinkkind.Kind{Name: "no-constructor"}})
}
