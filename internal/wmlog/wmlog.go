// Package wmlog sends Watermill's logs to logrus, for the pipeline, the brokers of the bus and
// the broker sinks alike.
package wmlog

import (
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/sirupsen/logrus"
)

// Adapter is a watermill.LoggerAdapter over a logrus logger. Watermill's info messages are
// per-connection and per-handler chatter, so they go to debug; trace is dropped; errors are
// errors, unless the adapter limits them (NewLimited).
type Adapter struct {
	l   logrus.FieldLogger
	lim *limiter
}

// New is an Adapter that logs every error at error level.
func New(l logrus.FieldLogger) Adapter { return Adapter{l: l} }

// NewLimited is an Adapter for clients whose errors repeat every few hundred milliseconds
// while their broker is down: each distinct message is logged as a warning at most once per
// every, the rest at debug.
func NewLimited(l logrus.FieldLogger, every time.Duration) Adapter {
	return Adapter{l: l, lim: &limiter{every: every, last: map[string]time.Time{}}}
}

func (a Adapter) Error(msg string, err error, fields watermill.LogFields) {
	e := a.l.WithFields(logrus.Fields(fields)).WithError(err)
	switch {
	case a.lim == nil:
		e.Error(msg)
	case a.lim.allow(msg):
		e.Warn(msg)
	default:
		e.Debug(msg)
	}
}

func (a Adapter) Info(msg string, fields watermill.LogFields) {
	a.l.WithFields(logrus.Fields(fields)).Debug(msg)
}

func (a Adapter) Debug(msg string, fields watermill.LogFields) {
	a.l.WithFields(logrus.Fields(fields)).Debug(msg)
}

func (a Adapter) Trace(string, watermill.LogFields) {}

func (a Adapter) With(fields watermill.LogFields) watermill.LoggerAdapter {
	return Adapter{l: a.l.WithFields(logrus.Fields(fields)), lim: a.lim}
}

// limiter lets one message through per key and period.
type limiter struct {
	every time.Duration
	mu    sync.Mutex
	last  map[string]time.Time
}

func (l *limiter) allow(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if t, ok := l.last[key]; ok && now.Sub(t) < l.every {
		return false
	}
	if len(l.last) > 1000 {
		clear(l.last) // a bound on distinct messages; forgetting only lets one more through
	}
	l.last[key] = now
	return true
}
