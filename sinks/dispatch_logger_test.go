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
