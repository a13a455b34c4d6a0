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

func TestEntry(t *testing.T) {
	if logx.Entry(nil) != nil || logx.Entry((*logrus.Entry)(nil)) != nil || logx.Entry((*logrus.Logger)(nil)) != nil {
		t.Fatal("Entry of a nil logger is not nil")
	}
	l := logrus.New()
	if e := logx.Entry(l); e == nil || e.Logger != l {
		t.Fatalf("Entry(*logrus.Logger) = %v, want an entry of it", e)
	}
	if e := logx.OrDiscard((*logrus.Entry)(nil)); e == nil || e.Logger.Out != io.Discard {
		t.Fatal("OrDiscard of a typed nil entry does not discard")
	}
	var custom logrus.FieldLogger = fieldLogger{l.WithField("from", "custom")}
	if e := logx.Entry(custom); e == nil || e.Logger != l || e.Data["from"] != "custom" {
		t.Fatalf("Entry(custom FieldLogger) = %v, want the entry its WithFields gives", e)
	}
}

// fieldLogger is a FieldLogger of a program's own (an adapter), neither an Entry nor a Logger.
type fieldLogger struct{ *logrus.Entry }
