package sinks

import (
	"io"
	"testing"

	"github.com/sirupsen/logrus"
)

// The dispatcher takes a nil logger as silence (logx.OrDiscard) and keeps a given one.
func TestNewDispatcherLogger(t *testing.T) {
	if out := NewDispatcher(DispatcherConfig{}).log.Logger.Out; out != io.Discard {
		t.Fatalf("nil Logger: the dispatcher writes to %T, want io.Discard", out)
	}
	given := logrus.NewEntry(logrus.New())
	if got := NewDispatcher(DispatcherConfig{Logger: given}).log; got != given {
		t.Fatalf("given Logger: the dispatcher logs through %p, want %p", got, given)
	}
}

// Any logrus.FieldLogger is taken: a *logrus.Logger logs through itself.
func TestNewDispatcherFieldLogger(t *testing.T) {
	l := logrus.New()
	if got := NewDispatcher(DispatcherConfig{Logger: l}).log; got == nil || got.Logger != l {
		t.Fatalf("a *logrus.Logger: the dispatcher logs through %v, want an entry of it", got)
	}
}
