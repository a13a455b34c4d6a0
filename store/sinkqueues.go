package store

import "context"

// SinkQueues lists the sink queues a store holds, by the sink names its deliveries were queued
// for: what the names of the sinks and handlers a program has now cannot show (a handler
// renamed or a sink removed leaves its queue under the old name). It is a role of its own, not
// part of Store; the SQLite and PostgreSQL stores implement it.
type SinkQueues interface {
	// SinkQueues counts the queued deliveries (neither delivered nor dead) of every sink that
	// has some, by sink name.
	SinkQueues(ctx context.Context) (map[string]int64, error)
}
