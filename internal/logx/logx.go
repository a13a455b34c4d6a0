// Package logx holds the defaults of an optional logger, shared by every part whose
// constructor takes one. Two policies, each written once: the store, the pruner, the client and
// the sinks' dispatcher take a nil logger as silence (OrDiscard); the kit, the receiver, the
// pipeline, the bus and the sandbox, whose logs an operator must see, as logrus's standard
// logger (OrStandard).
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

// OrStandard is l, or logrus's standard logger when l is nil.
func OrStandard(l *logrus.Entry) *logrus.Entry {
	if l == nil {
		return logrus.NewEntry(logrus.StandardLogger())
	}
	return l
}
