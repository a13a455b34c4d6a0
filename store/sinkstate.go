package store

import "time"

// SinkState is what was decided about a sink that must outlive the process: a sink disabled by
// its destination's 410 Gone answer, or by an operator, stays disabled across restarts until
// it is enabled again. A sink with no recorded state is enabled. Breaker state is not kept: it
// is rebuilt from fresh attempts.
type SinkState struct {
	Name     string
	Disabled bool
	// Reason says why it was disabled (the destination's answer, or the operator's words).
	Reason string
	// Since is when it was last disabled or enabled.
	Since time.Time
}
