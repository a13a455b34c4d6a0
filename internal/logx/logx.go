// Package logx holds the default of an optional logger, shared by every part whose
// constructor takes one: a nil logger means the caller wants silence, not logrus's standard
// logger on standard error.
package logx

import (
	"io"

	"github.com/sirupsen/logrus"
)

// Discard is a logger that writes nothing; each call returns a logger of its own, so a caller
// may change its level or hooks without reaching another's.
func Discard() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

// OrDiscard is l, or Discard() when l is nil.
func OrDiscard(l *logrus.Entry) *logrus.Entry {
	if l == nil {
		return Discard()
	}
	return l
}
