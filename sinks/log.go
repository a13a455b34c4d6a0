package sinks

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/scribehook/scribehook/api"
)

// LogSink writes each event as one JSON line, for piping into jq or a log shipper.
type LogSink struct {
	name string
	mu   sync.Mutex // one line at a time: concurrent deliveries must not interleave
	w    io.Writer
}

// NewLog builds a log sink writing to deps.Stdout.
func NewLog(spec Spec, deps Deps) *LogSink {
	deps = deps.WithDefaults()
	return &LogSink{name: spec.Name, w: deps.Stdout}
}

// Name implements Sink.
func (s *LogSink) Name() string { return s.name }

// Deliver writes ev as one line.
func (s *LogSink) Deliver(ctx context.Context, ev api.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	line, err := eventJSON(ev)
	if err != nil {
		return &Failure{Err: fmt.Errorf("encode event: %w", err), Permanent: true}
	}
	line = append(line, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	// One Write per line, so a writer shared with other output still gets whole lines.
	if _, err := s.w.Write(line); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// Close implements Sink; the writer belongs to the caller and stays open.
func (s *LogSink) Close() error { return nil }
