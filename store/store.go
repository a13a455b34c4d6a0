// Package store is scribehook's persistence contract: the inbox of raw deliveries, the job
// records, live messages, artifacts, quarantine and callback tokens. The SQLite implementation
// (store/sqlite) is the embedded default; a PostgreSQL one implements the same contract. Both
// are one core (store/internal/sqlcore) over a dialect each, and the shared suite in
// store/storetest runs against both. Each registers itself as a Driver when imported
// (Register), so that a program links only the databases it imports.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/scribehook/scribehook/api"
)

// Errors every implementation returns, so callers never see driver errors for these cases.
var (
	ErrNotFound = errors.New("not found")
	// ErrAlreadyApplied is returned by Apply for an inbox row that is already done: the
	// delivery's effects happened once and must not happen again.
	ErrAlreadyApplied = errors.New("inbox row already applied")
	// ErrTokenBound is returned by BindToken when the token serves another job.
	ErrTokenBound = errors.New("token is bound to another job")
	// ErrEmptyFilter is returned by ReplayInbox for a filter that names nothing and does not
	// say All: a forgotten flag or a typo must not replay every failed delivery.
	ErrEmptyFilter = errors.New("empty filter: name rows, a job, a kind, a time or an error text, or say all")
)

// Delivery is one authenticated callback as received, before any processing. Body holds the
// exact bytes received (a copy: Fiber reuses its buffers).
type Delivery struct {
	// DedupeKey is unique per logical delivery: a second delivery with the same key is a
	// duplicate and is not stored again.
	DedupeKey string
	// Route names how the delivery was authenticated: "job" for a per-job token, else the name
	// of a static route of the configuration.
	Route string
	// Kind is the classified shape; empty for a quarantined delivery.
	Kind api.CallbackKind
	// Event is the body's event (transcription.success, live.transcript, …).
	Event string
	// JobID is the job or live session the delivery is about.
	JobID string
	// MessageType and Category are set for live messages.
	MessageType api.MessageType
	Category    api.MessageCategory
	// Partition orders processing: deliveries with the same partition key are processed in
	// inbox order (the job or session id).
	PartitionKey string
	// Quarantine is the reason the body could not be classified; such deliveries go to the
	// quarantine table instead of the inbox.
	Quarantine string
	// Headers keeps the request headers worth keeping (content type, webhook ids), never
	// secrets.
	Headers    map[string]string
	Body       []byte
	ReceivedAt time.Time
	// Message locates a live message (the callback's payload) in Body, as the receiver's scan
	// found it, and MessageAt is its created_at: applying the message then reads neither again,
	// and the store keeps the message as this span of the one stored body instead of a copy
	// (docs/design.md, rule 8). Zero for other deliveries, and for rows stored by earlier
	// versions, whose messages are decoded from the body.
	Message   Span
	MessageAt time.Time
}

// Span is a range of bytes of a body: Len bytes from Off. The zero Span locates nothing.
type Span struct{ Off, Len int }

// Of returns the bytes s locates in body, and false when s is zero or does not fit in body.
func (s Span) Of(body []byte) ([]byte, bool) {
	if s.Len <= 0 || s.Off < 0 || s.Off > len(body)-s.Len {
		return nil, false
	}
	return body[s.Off : s.Off+s.Len : s.Off+s.Len], true
}

// IngestResult tells what Ingest did with one delivery.
type IngestResult struct {
	// ID is the inbox row id (or the quarantine row id when Quarantined).
	ID          int64
	Duplicate   bool // an earlier delivery had the same dedupe key; ID is that row's
	Quarantined bool
}

// InboxStatus is where an inbox row is in its processing.
type InboxStatus string

const (
	InboxPending InboxStatus = "pending"
	InboxDone    InboxStatus = "done"
	// InboxFailed rows exhausted their retries, or failed in a way no retry changes; they
	// stay visible (InboxFailures) until replayed or pruned.
	InboxFailed InboxStatus = "failed"
)

// InboxRow is a stored delivery with its processing state.
type InboxRow struct {
	ID int64
	Delivery
	Status InboxStatus
	// Attempts counts the attempts to apply the row that ended (applied or failed); a replay
	// resets it to 0. It is what decides the next retry's wait and the last retry.
	Attempts    int
	LastError   string
	ProcessedAt time.Time
	// NextAttempt is when a pending row that failed an attempt (or was replayed) is due again;
	// zero for a row never tried, due at once.
	NextAttempt time.Time
	// FailedAt is when the row was marked failed; zero unless it is failed (and for rows that
	// failed before the time was kept).
	FailedAt time.Time
}

// InboxKey is a pending inbox row as PendingInboxKeys and DueInboxKeys list it: what orders
// and groups it, how long it has waited and when it is due, without its body.
type InboxKey struct {
	ID           int64
	PartitionKey string
	ReceivedAt   time.Time
	// NextAttempt is the row's InboxRow.NextAttempt: zero for a row due at once.
	NextAttempt time.Time
}

// InboxFilter selects failed inbox rows for InboxFailures. Every criterion set must hold; a
// zero criterion holds for every row.
type InboxFilter struct {
	// IDs are the rows to take, when not empty.
	IDs []int64
	// JobID is the job or live session the delivery is about.
	JobID string
	// Kind is the classified shape (job result, job error, live message, account webhook).
	Kind api.CallbackKind
	// Since and Until bound when the delivery was received: at or after Since, before Until.
	Since, Until time.Time
	// Error is text the row's last error contains (case-sensitive).
	Error string
	// BeforeID takes rows with a smaller id only: FailedInbox lists newest first, so the next
	// page starts before the last id of the previous one.
	BeforeID int64
	// All says that a filter with no criterion means every failed row: ReplayInbox refuses an
	// empty filter without it (ErrEmptyFilter). It is no criterion itself.
	All bool
}

// Empty reports whether f sets no criterion (All aside).
func (f InboxFilter) Empty() bool {
	return len(f.IDs) == 0 && f.JobID == "" && f.Kind == "" && f.Since.IsZero() && f.Until.IsZero() &&
		f.Error == "" && f.BeforeID == 0
}

// QuarantineRow is an authenticated delivery whose body could not be classified.
type QuarantineRow struct {
	ID         int64
	Route      string
	Reason     string
	Headers    map[string]string
	Body       []byte
	ReceivedAt time.Time
}

// Local is what scribehook knows about a job beyond the service's record.
type Local struct {
	// Source says how the job became known: "submit" (created by scribehook), "callback",
	// "webhook" (an account webhook, resolved or not), or "reconcile" when its end was fetched
	// from the service in place of a lost callback (SourceReconcile).
	Source string `json:"source"`
	// ReceivedAt is when the first delivery about the job arrived; zero for a submitted job
	// without deliveries yet.
	ReceivedAt time.Time `json:"received_at,omitzero"`
	UpdatedAt  time.Time `json:"updated_at"`
	// Deliveries counts the deliveries applied to the job (duplicates are not counted).
	Deliveries int `json:"deliveries"`
	// Reconciled counts those of them the reconciler fetched from the service in place of lost
	// callbacks (RouteReconcile).
	Reconciled int `json:"reconciled,omitempty"`
	// ErrorMessage is the message of a job.error callback.
	ErrorMessage string `json:"error_message,omitempty"`
	// Resolution explains a thin webhook that could not be resolved to a full record (for
	// example, no API key configured).
	Resolution string `json:"resolution,omitempty"`
	// Final is the event of the delivery whose applying made the record final
	// (transcription.success, transcription.error, or live.end_session for a session's own
	// end_session message). Once set, later deliveries about the job change nothing
	// (docs/design.md, rule 7).
	Final string `json:"final,omitempty"`
	// EndedAt is the created_at of a live session's own end_session message. A message of the
	// session created before it and received within an hour of it is still stored and forwarded
	// (the service retries and does not order its callbacks); it changes nothing else.
	EndedAt time.Time `json:"ended_at,omitzero"`
}

// AfterFinalKey is the quarantine dedupe key of an inbox row set aside because its job was
// already final.
func AfterFinalKey(row InboxRow) string { return "after-final:" + row.DedupeKey }

// JobRecord is a job as scribehook stores it: the service's own record shape plus Local.
type JobRecord struct {
	Job   api.Job
	Local Local
	// Encoded, when set, is Job already encoded (api.EncodeJob, either escaping): a store
	// writes these bytes instead of encoding Job again, so that the pipeline encodes a record
	// once for the store and its job event. Whoever sets it keeps it in step with Job.
	Encoded []byte
}

// LiveMessage is one stored message of a live session. Seq numbers the messages of a session
// from 1 in the order they were applied.
type LiveMessage struct {
	SessionID  string
	Seq        int64
	Type       api.MessageType
	Category   api.MessageCategory
	CreatedAt  time.Time // the message's own created_at
	ReceivedAt time.Time
	InboxID    int64
	Payload    json.RawMessage // the exact message (the live callback's payload)
}

// Artifact is a file scribehook made for a job (subtitles, transcripts).
type Artifact struct {
	JobID     string
	Name      string
	Format    string
	Language  string
	Path      string
	Size      int64
	CreatedAt time.Time
}

// Token is a per-job capability token, stored only as a hash.
type Token struct {
	Hash []byte
	// JobID is empty until the job is known (the token is minted before the service assigns
	// the id); the first delivery or the submitter binds it.
	JobID     string
	Kind      api.JobKind
	CreatedAt time.Time
	RevokedAt time.Time
}

// SinkDelivery is one event queued for one sink (the sinks package's queue, kept here in the
// store's own terms). The store keeps an event once, by its id, whatever the number of sinks it
// goes to: each delivery refers to it, and reads it back in Event.
type SinkDelivery struct {
	ID          int64
	Sink        string
	EventID     string
	Event       api.Event
	OrderKey    string // the job or session id: ordered sinks deliver one key in order
	Attempts    int
	NextAttempt time.Time
	LastError   string
	CreatedAt   time.Time
	// FailedAt is set on dead letters.
	FailedAt time.Time
	// DataFrom, when not zero, is the inbox row whose located live message (InboxRow.Message)
	// is Event.Data: the event is stored without its data, which is read from that row when
	// the delivery is claimed, so that a live message is stored once (docs/design.md, rule 8).
	// The row then stays as long as the event. Only read by enqueueing.
	DataFrom int64
	// TraceParent and TraceState are the W3C trace context of the span that queued the
	// delivery (the pipeline's inbox.apply), for each attempt's span to continue; empty when
	// tracing was off. They hold no secret.
	TraceParent, TraceState string
}

// Tx is what Apply's function may do, inside the transaction that also marks the inbox row
// done. Reads see the transaction's own writes.
type Tx interface {
	Job(ctx context.Context, id string) (JobRecord, error) // ErrNotFound when unknown
	PutJob(ctx context.Context, rec JobRecord) error
	// AppendLiveMessage stores m with the session's next sequence number and returns it.
	AppendLiveMessage(ctx context.Context, m LiveMessage) (int64, error)
	// AppendReceivedMessages stores the live message of each inbox row of ids, in that order,
	// with its session's next numbers: the message the receiver located in the row's body
	// (InboxRow.Message), kept there rather than copied, its type, category and times taken
	// from the row (session: JobID; created_at: MessageAt). A row without a located message
	// fails the call; such a row's message goes through AppendLiveMessage.
	AppendReceivedMessages(ctx context.Context, ids []int64) error
	PutArtifact(ctx context.Context, a Artifact) error
	// IndexUtterances adds utterances to the search index (Searcher): a live final once its
	// message is applied, a job's result when it is. An utterance whose (JobID, Ref) is indexed
	// already is left out, so a replayed or reconciled delivery indexes nothing twice.
	IndexUtterances(ctx context.Context, us []Utterance) error
	// EnqueueSinkDeliveries queues events for sinks, in the same transaction as the delivery
	// that caused them (an outbox): a (sink, event id) pair already queued, delivered or dead is
	// ignored, so a replayed row never delivers twice. An event id stands for one event, stored
	// once: the first Event queued under an id is the one every sink gets.
	EnqueueSinkDeliveries(ctx context.Context, ds []SinkDelivery) error
	// Quarantine keeps a copy of an inbox row in the quarantine with reason, for a delivery
	// that authenticated and classified but must change nothing (a callback after its job's
	// final one): the row is still marked done, and is visible with the quarantined deliveries.
	// A row quarantined twice is kept once.
	Quarantine(ctx context.Context, row InboxRow, reason string) error
	// Speakers reads the names given to a job's speakers (SpeakerNaming.Speakers), after the
	// job's lock (Job) where Applies of one job can run at once: the pipeline checks that the
	// names it rendered a result's subtitles with are still the job's.
	Speakers(ctx context.Context, jobID string) (Speakers, error)
}

// JobPage is a page of local job records, newest first.
type JobPage struct {
	Items []JobRecord
	More  bool
}

// The store's methods are grouped in role interfaces, each named for what its consumer does
// with it, so that a consumer names the role it needs rather than the whole Store: the
// receiver's group committer (Batcher) only ingests, the pipeline works the Inbox and fills the
// Outbox, the sinks' dispatcher works the SinkQueue and keeps the SinkStateStore, the pruner
// only prunes (Retention), the read API reads jobs (JobReader) and dead letters
// (DeadLetterQueue) and checks callback tokens (TokenChecker). Store is their union, what a
// driver implements and storetest checks. Every method is safe for concurrent use.

// Ingester commits raw deliveries: the receiver's way into the inbox, through a Batcher.
type Ingester interface {
	// Ingest commits the deliveries in one transaction (group commit: callers batch concurrent
	// requests) and reports, per delivery, its row and whether it was a duplicate. Nothing is
	// committed when it returns an error.
	Ingest(ctx context.Context, ds []Delivery) ([]IngestResult, error)
}

// Inbox is the pipeline's side of the inbox: finding the rows to process and applying each
// exactly once.
type Inbox interface {
	// PendingInbox lists rows not done nor failed, by id, after afterID.
	PendingInbox(ctx context.Context, afterID int64, limit int) ([]InboxRow, error)
	// PendingInboxKeys lists the id, partition key, receipt time and due time of rows not done
	// nor failed, by id, after afterID: what queueing them, or finding the ones that waited too
	// long, needs, without reading their bodies.
	PendingInboxKeys(ctx context.Context, afterID int64, limit int) ([]InboxKey, error)
	// DueInboxKeys lists pending rows with a due time (NextAttempt) at or before now, by due
	// time then id, at most limit: rows whose retry came due and replayed rows, which the
	// pipeline finds this way whichever process recorded them. A row never tried (no due time)
	// is not listed.
	DueInboxKeys(ctx context.Context, now time.Time, limit int) ([]InboxKey, error)
	// PendingInboxByKey lists the pending rows of one partition key with id ≤ uptoID, by id,
	// at most limit. With several replicas, the row a replica is told about may not be the
	// oldest pending row of its job or session (another replica's notice of an earlier row can
	// be late or lost with its process): processing the key's earlier rows first keeps order.
	PendingInboxByKey(ctx context.Context, partitionKey string, uptoID int64, limit int) ([]InboxRow, error)
	// InboxRow reads one row, whatever its status; ErrNotFound when unknown.
	InboxRow(ctx context.Context, id int64) (InboxRow, error)
	// InboxRows reads the rows of ids that exist, by id.
	InboxRows(ctx context.Context, ids []int64) ([]InboxRow, error)
	// Apply runs fn and marks the inbox row done in one transaction. A row already done gives
	// ErrAlreadyApplied without running fn. An error from fn rolls everything back.
	Apply(ctx context.Context, inboxID int64, fn func(ctx context.Context, tx Tx) error) error
	// ApplyGroup applies several inbox rows in one transaction (one commit for all): it marks
	// each row of inboxIDs done as Apply does, leaving out a row already done (or missing), runs
	// fn once with the rows it marked, in the order given, and commits. fn applies the effects
	// of every one of them; its error rolls the whole group back. When no row was pending, fn
	// does not run.
	ApplyGroup(ctx context.Context, inboxIDs []int64, fn func(ctx context.Context, tx Tx, ids []int64) error) error
	// MarkInboxFailed records a failed attempt (Attempts + 1) and its error. The row stays
	// pending, due again at retryAt; a zero retryAt marks it failed instead, for good (FailedAt
	// the store's now) until a replay. A row already done is left alone: ErrAlreadyApplied.
	MarkInboxFailed(ctx context.Context, inboxID int64, errMsg string, retryAt time.Time) error
}

// InboxFailures lists the inbox rows that failed for good and moves them back to pending (a
// replay): the read API, the dashboard, `scribehook inbox` and Kit.Records.
type InboxFailures interface {
	// FailedInbox lists the failed rows f selects, newest (highest id) first, at most limit
	// (zero or less: all of them). Rows come without Body and Headers, which InboxRow reads.
	FailedInbox(ctx context.Context, f InboxFilter, limit int) ([]InboxRow, error)
	// CountFailedInbox counts the failed rows.
	CountFailedInbox(ctx context.Context) (int64, error)
	// ReplayInbox moves the failed rows f selects back to pending, attempts reset to 0, due at
	// now (NextAttempt, which DueInboxKeys finds), and returns the rows it moved by id. A row
	// not failed (pending, done, unknown, or replayed meanwhile by someone else) is left out.
	// An empty filter without All is ErrEmptyFilter.
	ReplayInbox(ctx context.Context, f InboxFilter, now time.Time) ([]InboxKey, error)
}

// InboxReader reads the inbox without changing it: its backlog (the receiver's metrics) and
// the deliveries set aside.
type InboxReader interface {
	// InboxBacklog counts pending rows.
	InboxBacklog(ctx context.Context) (int64, error)
	// Quarantined lists quarantined deliveries, newest first.
	Quarantined(ctx context.Context, limit int) ([]QuarantineRow, error)
}

// JobReader reads what the pipeline stored about jobs: records, live messages, artifacts. The
// read API, WaitJob and the kit's Records read through it.
type JobReader interface {
	// GetJob reads a job's (or live session's) record; ErrNotFound when unknown.
	GetJob(ctx context.Context, id string) (JobRecord, error)
	// ListJobs filters like the service's lists (status, kind, dates, custom_metadata subset)
	// and pages with q's offset and limit, newest first.
	ListJobs(ctx context.Context, q api.ListQuery) (JobPage, error)
	// LiveMessages lists a session's messages with Seq > afterSeq in order, at most limit.
	LiveMessages(ctx context.Context, sessionID string, afterSeq int64, limit int) ([]LiveMessage, error)
	// Artifacts lists the files made for a job, by name.
	Artifacts(ctx context.Context, jobID string) ([]Artifact, error)
}

// JobWriter stores job records outside a delivery: the submitter's.
type JobWriter interface {
	// PutJob stores a job record outside a delivery, replacing any record of the same id.
	PutJob(ctx context.Context, rec JobRecord) error
	// CreateJob stores rec only if no record has its id, atomically, and reports whether it
	// did: the submitter records a job it created without overwriting a record that a callback,
	// possibly faster than the submitter, already stored. In the same transaction, and even
	// when the record existed, it lists the job for reconciliation (ReconcileList), due at
	// rec.Job.CreatedAt: the kit created it and waits for its end.
	CreateJob(ctx context.Context, rec JobRecord) (bool, error)
}

// Outbox queues events for sinks outside an inbox row (Tx.EnqueueSinkDeliveries queues them
// inside one).
type Outbox interface {
	// EnqueueSinkDeliveries queues events outside an inbox row (subtitles rendered later).
	EnqueueSinkDeliveries(ctx context.Context, ds []SinkDelivery) error
}

// SinkQueue is the sinks' durable queue as the dispatcher works it: claims under a lease, and
// the settlement of each attempt.
type SinkQueue interface {
	// ClaimSinkDeliveries leases up to limit due deliveries of a sink (NextAttempt ≤ now),
	// oldest first; a leased delivery is not claimed again before the lease ends. For an
	// ordered sink only the oldest undelivered delivery of each order key is eligible.
	ClaimSinkDeliveries(ctx context.Context, sink string, ordered bool, now time.Time, lease time.Duration, limit int) ([]SinkDelivery, error)
	// CompleteSinkDelivery records a delivered event (kept as delivered so that the same event
	// is never queued again for the sink).
	CompleteSinkDelivery(ctx context.Context, id int64) error
	// CompleteSinkDeliveries records several delivered events in one transaction, all or
	// nothing: an unknown id is ErrNotFound and none is recorded.
	CompleteSinkDeliveries(ctx context.Context, ids []int64) error
	// CompleteAndClaimSinkDeliveries is CompleteSinkDeliveries(done) and then
	// ClaimSinkDeliveries in one transaction, all or nothing; the claim sees the completions.
	CompleteAndClaimSinkDeliveries(ctx context.Context, done []int64, sink string, ordered bool, now time.Time, lease time.Duration, limit int) ([]SinkDelivery, error)
	// RetrySinkDelivery records a failed attempt, its error, and when to try again.
	RetrySinkDelivery(ctx context.Context, id int64, next time.Time, errMsg string) error
	// KillSinkDelivery moves a delivery to the dead letters with its last error.
	KillSinkDelivery(ctx context.Context, id int64, errMsg string, at time.Time) error
	// SinkDepth counts a sink's queued deliveries (not delivered, not dead).
	SinkDepth(ctx context.Context, sink string) (int64, error)
}

// SinkStateStore keeps what was decided about each sink (disabled by a 410 answer or by an
// operator, enabled again) beyond a process's life.
type SinkStateStore interface {
	// SetSinkState records a sink's state (disabled with a reason, or enabled again), durably;
	// a zero Since is now.
	SetSinkState(ctx context.Context, st SinkState) error
	// SinkStates lists the recorded sink states by name; a sink without one is enabled.
	SinkStates(ctx context.Context) ([]SinkState, error)
}

// DeadLetterQueue lists the deliveries that failed their last attempt and queues them again.
type DeadLetterQueue interface {
	// DeadLetters lists dead letters newest first; sink "" is every sink, zero since all.
	DeadLetters(ctx context.Context, sink string, since time.Time, limit int) ([]SinkDelivery, error)
	// ReplayDeadLetter queues a dead letter again, due at now, attempts reset.
	ReplayDeadLetter(ctx context.Context, id int64, now time.Time) error
}

// TokenChecker is what the receiver does with callback tokens: find one, and bind it to the
// job its first delivery names.
type TokenChecker interface {
	// LookupToken finds a token by its hash; revoked tokens are returned with RevokedAt set.
	LookupToken(ctx context.Context, hash []byte) (Token, error)
	// BindToken sets the token's job if it has none; ErrTokenBound if it has another.
	BindToken(ctx context.Context, hash []byte, jobID string) error
}

// Tokens is every use of callback tokens: the submitter mints and revokes them, the receiver
// checks them.
type Tokens interface {
	TokenChecker
	// CreateToken stores a new token (its hash); an existing hash is an error.
	CreateToken(ctx context.Context, t Token) error
	// RevokeToken refuses the token from now on, keeping the first revocation time.
	RevokeToken(ctx context.Context, hash []byte) error
}

// Retention deletes what has been kept long enough: the pruner's role.
type Retention interface {
	// Prune deletes what p says has been kept long enough at now, in batches of p.BatchSize
	// rows per transaction, and reports per kind what it deleted; with dryRun it deletes
	// nothing and reports what it would delete. It never deletes an inbox row not yet done (a
	// failed row goes with the dead letters), a sink delivery still queued, a job record that is
	// not final, nor a message of a live session that has not ended (retention.go).
	Prune(ctx context.Context, p RetentionPolicy, now time.Time, dryRun bool) (PruneReport, error)
}

// Store is the persistence contract: every role, what a driver implements (storetest checks
// it) and what the kit that opened it holds. A consumer names the role it needs instead.
type Store interface {
	Ingester
	Inbox
	InboxReader
	InboxFailures
	JobReader
	JobWriter
	Outbox
	SinkQueue
	SinkStateStore
	DeadLetterQueue
	Tokens
	Retention
	ReconcileList

	// ReleaseSinkLeases releases every sink delivery lease and reports how many it released;
	// only for a process that owns the store alone (serve on SQLite at startup): a lease held
	// by a killed process otherwise delays its deliveries until the lease ends. Attempts and
	// due times are unchanged. A store shared by several processes (PostgreSQL) does nothing
	// and returns 0: the leases it holds may be other replicas' live ones, and they expire.
	ReleaseSinkLeases(ctx context.Context) (int64, error)
	// Ping checks the store is reachable (readiness).
	Ping(ctx context.Context) error
	Close() error
}
