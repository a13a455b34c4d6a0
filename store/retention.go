package store

import (
	"context"
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
)

// DefaultPruneBatch is RetentionPolicy.BatchSize when it is zero: small enough that one
// transaction holds SQLite's only write lock for a few milliseconds, so ingest never waits
// long behind the pruner.
const DefaultPruneBatch = 500

// RetentionPolicy says how long each kind of row is kept before Prune deletes it. A zero
// duration keeps that kind for ever; a category missing from Live keeps its messages for ever.
//
// What each duration is measured from, and what is never deleted whatever the policy:
//
//   - Inbox: done rows, from processed_at. Their dedupe keys go with them: a redelivery of a
//     pruned row is stored and applied again, and set aside once its job is final (rule 7),
//     so the duration must outlast the service's retries. A row holding a live message stored
//     by reference (Tx.AppendReceivedMessages) stays as long as its message, and goes at the
//     first run after the message went.
//   - DeadLetters: dead sink deliveries from failed_at, and inbox rows that exhausted their
//     retries (status failed, the inbox's own dead letters) from received_at. Pending inbox rows
//     and queued sink deliveries (due, leased or waiting for a retry) are never deleted.
//   - Live: the messages of a category from received_at, only once their session's record is
//     final (its end_session applied). The last message of a session stays while its record
//     does, so that a message arriving late never reuses a sequence number.
//   - Jobs: final job records from completed_at, with their artifacts (Artifacts is told
//     first, to remove the files) and the messages left of a live session. A record that is not
//     final is kept, however old.
//   - SinkDelivered: delivered sink deliveries, from delivered_at.
//   - Events (no duration of its own): an event goes in the transaction that deletes the last
//     sink delivery referring to it, delivered (SinkDelivered) or dead (DeadLetters); while a
//     delivery refers to it, queued or kept, it stays.
//   - Quarantine: quarantined deliveries, from received_at.
//   - Tokens: per-job callback tokens, revoked or not, from created_at: the token lifetime
//     (receiver.token_ttl), after which a token authenticates nothing. Jobs must be kept at
//     least as long: a late delivery a token still authenticates for a pruned job would
//     create its record again (configs checks it).
//   - Sessions: revocations of dashboard sessions (Sessions), from the session's own expiry,
//     after which its cookie is refused anyway. A revoke-all's cutoff is one row, kept.
type RetentionPolicy struct {
	Inbox         time.Duration
	Live          map[api.MessageCategory]time.Duration
	Jobs          time.Duration
	SinkDelivered time.Duration
	DeadLetters   time.Duration
	Quarantine    time.Duration
	Tokens        time.Duration
	Sessions      time.Duration
	// BatchSize is the most rows one transaction deletes (default DefaultPruneBatch); rows
	// with large values (bodies, events, job records) go in batches of about 8 MiB at most
	// besides.
	BatchSize int
	// RemoveArtifacts, when set, is given the artifacts of a batch of jobs before their rows
	// are deleted, to remove the files; an error keeps the batch for the next run. Nil leaves the
	// files where they are.
	RemoveArtifacts func(ctx context.Context, arts []Artifact) error
}

// PruneKind names one kind of row Prune deletes; it is the kind label of the pruned-rows
// metric.
type PruneKind string

// The kinds of PruneReport, in the order Prune goes through them; LiveKind names the live
// messages of one category.
const (
	PruneInbox         PruneKind = "inbox"
	PruneInboxFailed   PruneKind = "inbox_failed"
	PruneJobs          PruneKind = "jobs"
	PruneArtifacts     PruneKind = "artifacts"
	PruneSessionRest   PruneKind = "live_messages" // the messages left of a pruned session
	PruneSinkDelivered PruneKind = "sink_delivered"
	PruneDeadLetters   PruneKind = "dead_letters"
	PruneEvents        PruneKind = "events" // sink events no delivery refers to any more
	PruneQuarantine    PruneKind = "quarantine"
	PruneTokens        PruneKind = "tokens"
	PruneSessions      PruneKind = "sessions" // revocations of dashboard sessions that expired
)

// LiveKind is the kind of the live messages of category c: live_messages.<category>.
func LiveKind(c api.MessageCategory) PruneKind { return PruneSessionRest + "." + PruneKind(c) }

// PruneKinds lists every kind in report order.
func PruneKinds() []PruneKind {
	kinds := []PruneKind{PruneInbox, PruneInboxFailed}
	for _, c := range api.Categories {
		kinds = append(kinds, LiveKind(c))
	}
	return append(kinds, PruneJobs, PruneArtifacts, PruneSessionRest, PruneSinkDelivered, PruneDeadLetters, PruneEvents, PruneQuarantine, PruneTokens, PruneSessions)
}

// Keep is how long p keeps the rows of kind k, the duration Prune measures that kind's cutoff
// by (0 or less: for ever). Several kinds share one duration: the inbox's dead letters go with
// the sinks' (DeadLetters), and a job's artifacts and the rest of its session with the job.
// Events have no duration of their own: they go with the last delivery referring to them, so
// Keep gives the soonest that can be, the shorter of SinkDelivered and DeadLetters that is set.
func (p RetentionPolicy) Keep(k PruneKind) time.Duration {
	switch k {
	case PruneEvents:
		if p.SinkDelivered <= 0 || (p.DeadLetters > 0 && p.DeadLetters < p.SinkDelivered) {
			return p.DeadLetters
		}
		return p.SinkDelivered
	case PruneInbox:
		return p.Inbox
	case PruneInboxFailed, PruneDeadLetters:
		return p.DeadLetters
	case PruneJobs, PruneArtifacts, PruneSessionRest:
		return p.Jobs
	case PruneSinkDelivered:
		return p.SinkDelivered
	case PruneQuarantine:
		return p.Quarantine
	case PruneTokens:
		return p.Tokens
	case PruneSessions:
		return p.Sessions
	}
	if c, ok := strings.CutPrefix(string(k), string(PruneSessionRest)+"."); ok {
		return p.Live[api.MessageCategory(c)]
	}
	return 0
}

// PruneReport is what Prune deleted, or would delete in a dry run.
type PruneReport struct {
	DryRun bool
	// Rows counts the rows per kind; a kind with nothing to delete is absent.
	Rows map[PruneKind]int64
	// ReclaimedBytes is the space given back to the file system afterwards (SQLite's
	// incremental vacuum); 0 where the database reclaims on its own (PostgreSQL's autovacuum).
	ReclaimedBytes int64
}

// Total is the number of rows over every kind.
func (r PruneReport) Total() int64 {
	var n int64
	for _, v := range r.Rows {
		n += v
	}
	return n
}
