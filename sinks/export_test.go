package sinks

import "time"

// WithTimer is cfg with the dispatcher's timer replaced: a test that drives the dispatcher's
// Now by hand wakes its waits when it moves that clock.
func WithTimer(cfg DispatcherConfig, after func(time.Duration) <-chan time.Time) DispatcherConfig {
	cfg.after = after
	return cfg
}
