// Package logx holds the defaults of an optional logger, shared by every part whose
// constructor takes one. Public signatures take a logrus.FieldLogger; the parts convert it once,
// here, to the *logrus.Entry they log through. Two policies, each written once: the store, the
// pruner, the client and the sinks' dispatcher take a nil logger as silence (OrDiscard); the
// kit, the receiver, the pipeline, the bus and the sandbox, whose logs an operator must see, as
// logrus's standard logger (OrStandard).
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

// Entry is l as an entry: l itself when it is one, an entry of it when it is a *logrus.Logger,
// and otherwise the entry l.WithFields gives (every FieldLogger makes entries); nil when l is
// nil, or a nil *logrus.Entry or *logrus.Logger.
func Entry(l logrus.FieldLogger) *logrus.Entry {
	switch v := l.(type) {
	case nil:
		return nil
	case *logrus.Entry:
		return v
	case *logrus.Logger:
		if v == nil {
			return nil
		}
		return logrus.NewEntry(v)
	default:
		return l.WithFields(logrus.Fields{})
	}
}

// OrDiscard is l as an entry (Entry), or Discard() when l is nil.
func OrDiscard(l logrus.FieldLogger) *logrus.Entry {
	if e := Entry(l); e != nil {
		return e
	}
	return Discard()
}

// OrStandard is l as an entry (Entry), or an entry of logrus's standard logger when l is nil.
func OrStandard(l logrus.FieldLogger) *logrus.Entry {
	if e := Entry(l); e != nil {
		return e
	}
	return logrus.NewEntry(logrus.StandardLogger())
}
