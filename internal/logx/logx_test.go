package logx_test

import (
	"io"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/internal/logx"
)

func TestOrDiscard(t *testing.T) {
	given := logrus.NewEntry(logrus.New())
	if got := logx.OrDiscard(given); got != given {
		t.Fatalf("OrDiscard(l) = %p, want l itself (%p)", got, given)
	}

	quiet := logx.OrDiscard(nil)
	if quiet == nil {
		t.Fatal("OrDiscard(nil) is nil")
	}
	if w := quiet.Logger.Out; w != io.Discard {
		t.Fatalf("OrDiscard(nil) writes to %T, want io.Discard", w)
	}
	if logx.Discard().Logger == quiet.Logger {
		t.Fatal("two Discard loggers share one logrus.Logger")
	}
}

func TestOrStandard(t *testing.T) {
	given := logrus.NewEntry(logrus.New())
	if got := logx.OrStandard(given); got != given {
		t.Fatalf("OrStandard(l) = %p, want l itself (%p)", got, given)
	}
	if got := logx.OrStandard(nil); got == nil || got.Logger != logrus.StandardLogger() {
		t.Fatalf("OrStandard(nil) = %v, want an entry of logrus's standard logger", got)
	}
}
