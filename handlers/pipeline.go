// Package handlers processes committed deliveries: a Watermill router with one persist handler
// per partition (deliveries of one job or session share a partition, so sessions keep their
// order) that applies each inbox row to the store exactly once. Applying a row decodes it,
// resolves a thin webhook or a final callback through the service, renders a finished job's
// subtitles, writes the job record or appends the live message, and queues the resulting
// events for every sink whose filter takes them, all in the transaction that marks the row
// done (the outbox that sinks.Dispatcher drains). The events are also published on
// TopicEvents for in-process subscribers (Pipeline.Events). With a Bus (Redis Streams or NATS
// JetStream) several replicas share the rows through notices and a sweep (busmode.go).
package handlers

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"go.opentelemetry.io/otel/trace"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/traces"
	"github.com/scribehook/scribehook/internal/wmlog"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
)

// Topics of the in-process bus.
const (
	// TopicEvents carries the domain events (api.Event as JSON).
	TopicEvents = "scribehook.events"
	topicInbox  = "scribehook.inbox."
	topicPoison = "scribehook.poison"

	metaInboxID = "inbox_id"
	metaAttempt = "attempt"

	// scanPage is how many pending rows one read of the inbox returns.
	scanPage = 500
)

// Resolver fetches a job's full record from the service: thin webhooks carry only an id, and
// callbacks lack the record's own fields (created_at, file, request_params).
type Resolver interface {
	GetJob(ctx context.Context, id string, kind api.JobKind) (api.Job, error)
}

// Store is what the pipeline needs of the store: the Inbox it works (events are queued inside
// its Applies, through the Tx), and the job records it reads outside an Apply. A store.Store
// has both.
type Store interface {
	store.Inbox
	// EnqueueSinkDeliveries queues the events no inbox row causes (Emit).
	store.Outbox
	GetJob(ctx context.Context, id string) (store.JobRecord, error)
}

// Config holds the pipeline's dependencies; zero values take the documented defaults.
type Config struct {
	Store Store
	// Resolver is nil when no API key is configured: records then hold what deliveries carry,
	// with a note saying why.
	Resolver Resolver
	// Partitions bounds how many rows are processed at once (default 4). Rows of one job or
	// session always go to the same partition, which processes them in inbox order.
	Partitions int
	// RetrySchedule is the wait after each failed attempt to apply a row before the next one
	// (default DefaultRetrySchedule: 1 s, 5 s, 30 s, 2 min, 10 min), the last wait repeating
	// when MaxRetries is longer; the row keeps when it is due (retry.go), so a restart keeps
	// the timing. MaxRetries is how many retries a row gets before it is marked failed
	// (default the schedule's length); an error no retry changes fails it at once.
	RetrySchedule []time.Duration
	MaxRetries    int
	// RetryPoll is how often the store is asked for rows that came due (a replay by another
	// process, a retry another replica recorded; default 1 s). This process's own retries
	// come at their due time.
	RetryPoll time.Duration
	// HandlerTimeout bounds one attempt (default 30 s).
	HandlerTimeout time.Duration
	// SweepInterval is how often rows that are pending but not queued are picked up again
	// (default 30 s): a safety net behind the startup scan and the commit notifications.
	SweepInterval time.Duration
	// Now is the clock of the times the pipeline stamps (a record's local.updated_at, an
	// event's queueing, an artifact's creation) and of the sweep's grace (default time.Now).
	Now func() time.Time
	// Metrics registers the pipeline's metrics; nil registers none.
	Metrics prometheus.Registerer
	// Logger receives the pipeline's logs and Watermill's (default: logrus's standard
	// logger).
	Logger logrus.FieldLogger
	// Subtitles renders subtitle artifacts when a job succeeds (Dir empty: none).
	Subtitles SubtitleRendering
	// Sinks are the configured sinks; each event is queued for every sink whose filter takes
	// it, in the transaction of the delivery that caused it.
	Sinks []sinks.Spec
	// Wake is told the sinks that have new deliveries (the dispatcher's Wake).
	Wake func(sink string)

	// Bus, when set, carries commit notices through a broker that several replicas share
	// (Redis Streams, NATS JetStream; see busmode.go); nil keeps everything in this process, on
	// the GoChannel. The pipeline owns it: Close closes it, and so does New when it fails.
	Bus *Bus
	// SweepGrace: with a Bus, the sweep drains rows pending for longer than this (default 5 s);
	// younger rows are left to their notices.
	SweepGrace time.Duration
	// NoticeQueue bounds, with a Bus, the notices waiting to be published (default 10000);
	// past it a notice is dropped and its row waits for the sweep.
	NoticeQueue int
	// TracerProvider, when set, traces each apply with an inbox.apply span, the child of the
	// callback.receive span stored with the row, and stores the apply's context with the sink
	// deliveries it queues (docs/operations.md, Traces); nil traces nothing.
	TracerProvider trace.TracerProvider
}

// Pipeline is the processing side of scribehook.
type Pipeline struct {
	cfg    Config
	log    *logrus.Entry
	router *message.Router
	inbox  *gochannel.GoChannel // publishing blocks until the handler acks: order and bounds
	events *gochannel.GoChannel
	poison *gochannel.GoChannel
	parts  []*partition
	feed   *localFeed
	m      *metrics
	bus    *busMode // nil: the in-process GoChannel
	// rowChain is one attempt of the persist handler on one row, with its timeout and
	// recoverer: what a batch runs for a row applied alone (group.go), in both modes.
	rowChain message.HandlerFunc
	// eventsWatched: Events was called, so the domain events are encoded for TopicEvents.
	eventsWatched atomic.Bool
	// tracer starts the inbox.apply spans (tracing.go); off without Config.TracerProvider.
	tracer traces.Tracer
	// holds are the keys whose earliest pending row waits for its next attempt (retry.go).
	holds *holds
	// rescan asks follow (the GoChannel path) for a scan of every pending row: rows left
	// behind a hold that went, or a replay.
	rescan chan struct{}
	// whenLogged holds the names of the sinks whose when's failure was logged (when.go).
	whenLogged sync.Map

	mu     sync.Mutex
	queued map[int64]bool
	// cursor is the highest row id queued by a scan of the inbox: rows are queued in id order
	// by reading the inbox, whatever the order of the commit notifications.
	cursor  int64
	started bool
	done    chan struct{}
	wake    chan struct{} // capacity 1: rows past the cursor were committed
	runCtx  atomic.Pointer[context.Context]
	wg      sync.WaitGroup
}

// New builds the pipeline; Run starts it.
func New(cfg Config) (_ *Pipeline, err error) {
	defer func() {
		if err != nil && cfg.Bus != nil {
			_ = cfg.Bus.Close() // the pipeline owns it
		}
	}()
	if cfg.Store == nil {
		return nil, errors.New("handlers: store is required")
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = configs.DefaultPartitions
	}
	if len(cfg.RetrySchedule) == 0 {
		cfg.RetrySchedule = DefaultRetrySchedule()
	}
	cfg.RetrySchedule = slices.Clone(cfg.RetrySchedule)
	for i, d := range cfg.RetrySchedule {
		if d < 0 {
			return nil, fmt.Errorf("handlers: retry schedule: wait %d is negative (%s)", i+1, d)
		}
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = len(cfg.RetrySchedule)
	}
	if cfg.RetryPoll <= 0 {
		cfg.RetryPoll = DefaultRetryPoll
	}
	if cfg.HandlerTimeout <= 0 {
		cfg.HandlerTimeout = 30 * time.Second
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = configs.DefaultSweepInterval
	}
	if cfg.SweepGrace <= 0 {
		cfg.SweepGrace = DefaultSweepGrace
	}
	if cfg.NoticeQueue <= 0 {
		cfg.NoticeQueue = DefaultNoticeQueue
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Logger = logx.OrStandard(cfg.Logger)
	wlog := wmlog.New(cfg.Logger.WithField("component", "watermill"))
	p := &Pipeline{
		cfg:    cfg,
		log:    cfg.Logger.WithField("component", "handlers"),
		inbox:  gochannel.NewGoChannel(gochannel.Config{BlockPublishUntilSubscriberAck: true}, wlog),
		events: gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 1024}, wlog),
		poison: gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 64}, wlog),
		feed:   newLocalFeed(),
		m:      newMetrics(),
		holds:  newHolds(),
		rescan: make(chan struct{}, 1),
		queued: map[int64]bool{},
		done:   make(chan struct{}),
		wake:   make(chan struct{}, 1),
		tracer: traces.New(cfg.TracerProvider),
	}
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 10 * time.Second}, wlog)
	if err != nil {
		return nil, fmt.Errorf("handlers: router: %w", err)
	}
	// A row interrupted by a stop is not poisoned: it stays pending for the next start.
	poison, err := middleware.PoisonQueueWithFilter(p.poison, topicPoison, func(err error) bool {
		return !p.stopping() && !errors.Is(err, context.Canceled)
	})
	if err != nil {
		return nil, fmt.Errorf("handlers: poison queue: %w", err)
	}
	router.AddMiddleware(middleware.CorrelationID)
	// One attempt at a row: its own timeout, a panic an error like others. A failed attempt is
	// recorded in the row with when it is due again (retry.go): nothing retries in memory.
	p.rowChain = middleware.Timeout(cfg.HandlerTimeout)(middleware.Recoverer(p.persist))
	var busMetrics []prometheus.Collector
	if cfg.Bus != nil {
		// The rows come from the broker's notices (busmode.go), not from the inbox topics.
		p.bus = newBusMode(p, cfg.Bus, wlog)
		busMetrics = p.bus.collectors()
	} else {
		for i := 0; i < cfg.Partitions; i++ {
			topic := topicInbox + strconv.Itoa(i)
			h := router.AddHandler("persist-"+strconv.Itoa(i), topic, p.inbox, TopicEvents, p.events, p.persistBatch)
			// A batch handler retries its rows itself (rowChain) and fails only at a stop, which
			// the poison queue lets go; a panic of its own is an error like others. They wrap the
			// persist handlers only: around the poison handler, a poison queue would feed the
			// handler its own failures forever.
			h.AddMiddleware(poison, middleware.Recoverer)
			p.parts = append(p.parts, newPartition(topic))
		}
	}
	// Poisoned rows are marked failed, visible and retryable, instead of vanishing.
	router.AddConsumerHandler("poisoned", topicPoison, p.poison, p.poisoned)
	p.router = router
	if err := p.m.register(cfg.Metrics, busMetrics...); err != nil {
		return nil, fmt.Errorf("handlers: register metrics: %w", err)
	}
	return p, nil
}

// Run starts the router, queues every committed row not yet processed (in inbox order), then
// follows commit notifications until ctx ends or Close is called.
func (p *Pipeline) Run(ctx context.Context) error {
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		return errors.New("handlers: pipeline already running")
	}
	select {
	case <-p.done:
		// Close came first and left the router alone (see Close): it must not run now.
		p.mu.Unlock()
		return errors.New("handlers: run after close")
	default:
	}
	p.started = true
	p.mu.Unlock()
	p.runCtx.Store(&ctx)

	routerErr := make(chan error, 1)
	go func() { routerErr <- p.router.Run(ctx) }()
	select {
	case <-p.router.Running():
	case err := <-routerErr:
		if err == nil {
			// Closed before Run got here (Running is closed then too, and select picks either):
			// a stop, not a failure.
			return nil
		}
		return fmt.Errorf("handlers: router: %w", err)
	}
	if p.bus != nil {
		return p.runBus(ctx, routerErr)
	}
	n, err := p.scan(ctx, false)
	if err != nil {
		if p.stopping() {
			return nil // stopped during the startup scan: the rows wait for the next start
		}
		return err
	}
	if n > 0 {
		p.log.WithField("rows", n).Info("resuming deliveries committed before the last stop")
	}
	// Close may have come during the scan: it waits for the goroutines started before it.
	p.mu.Lock()
	if p.stopping() {
		p.mu.Unlock()
		return nil
	}
	p.wg.Add(len(p.parts) + 1)
	p.mu.Unlock()
	for _, part := range p.parts {
		go p.publishLoop(part)
	}
	go p.follow(ctx)
	return p.wait(ctx, routerErr)
}

// wait is the end of Run: ctx ends, Close is called, or the router stops.
func (p *Pipeline) wait(ctx context.Context, routerErr <-chan error) error {
	select {
	case <-ctx.Done():
	case <-p.done:
	case err := <-routerErr:
		if err != nil {
			return fmt.Errorf("handlers: router: %w", err)
		}
	}
	return nil
}

// Running is closed once the router runs.
func (p *Pipeline) Running() <-chan struct{} { return p.router.Running() }

// Ready reports whether rows are being processed. It does not depend on the broker: while
// the broker is away, deliveries are still stored (the receiver never asks it) and the sweep
// processes them, so a load balancer checking readiness must keep sending to this replica.
// BrokerUp says how the broker is doing.
func (p *Pipeline) Ready() bool {
	return p.router.IsRunning() && !p.router.IsClosed()
}

// BrokerUp reports whether the broker answers and this replica's subscriptions run; always
// true for the in-process bus.
func (p *Pipeline) BrokerUp() bool {
	return p.bus == nil || p.bus.ready()
}

// Close stops queueing, lets the handlers finish their current rows, and closes the bus. Rows
// still pending stay in the inbox for the next start. A pipeline never run closes at once, and
// Run does nothing after it.
func (p *Pipeline) Close() error {
	p.mu.Lock()
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	ran := p.started
	p.mu.Unlock()
	var busErr error
	if p.bus != nil {
		busErr = p.bus.close()
	}
	for _, part := range p.parts {
		part.close()
	}
	var err error
	if ran {
		// Watermill's Close waits for every handler added to the router to stop, and a handler
		// only stops once it ran: on a router never run, it would wait for its whole close
		// timeout and leave its waiting goroutines behind.
		err = p.router.Close()
	}
	p.wg.Wait()
	_ = p.inbox.Close()
	_ = p.events.Close()
	_ = p.poison.Close()
	return errors.Join(err, busErr)
}

// Events subscribes to the domain events (TopicEvents).
func (p *Pipeline) Events(ctx context.Context) (<-chan *message.Message, error) {
	p.eventsWatched.Store(true)
	return p.events.Subscribe(ctx, TopicEvents)
}

// Committed tells the pipeline that a row was committed; it never blocks the receiver.
//
// Rows are queued by reading the inbox in id order, not in the order of these calls: the
// requests that shared a group commit notify from their own goroutines, in any order, and a
// session's later row must not overtake an earlier one. A row past the inbox cursor wakes the
// reader (which finds every row committed before it too); a row the reader has passed (a
// repeated notification, or a row committed late by another writer) is queued directly.
func (p *Pipeline) Committed(inboxID int64, partitionKey string) {
	if p.bus != nil {
		p.bus.notify(inboxID, partitionKey)
		return
	}
	p.mu.Lock()
	passed := inboxID <= p.cursor
	p.mu.Unlock()
	if passed {
		p.enqueue(inboxID, partitionKey)
		return
	}
	ping(p.wake)
}

// Replayed tells the pipeline of rows moved back to pending by a replay (store.InboxFailures):
// they are queued as committed rows are (Committed), and counted
// (scribehook_inbox_replayed_total). A replay by another process is found by the store's due
// rows instead (RetryPoll).
func (p *Pipeline) Replayed(rows []store.InboxKey) {
	p.m.replayed.Add(float64(len(rows)))
	for _, k := range rows {
		p.Committed(k.ID, k.PartitionKey)
	}
}

// enqueue queues a row on its partition unless it is queued already, and moves the cursor
// past it.
func (p *Pipeline) enqueue(id int64, partitionKey string) {
	p.mu.Lock()
	if id > p.cursor {
		p.cursor = id
	}
	if p.queued[id] {
		p.mu.Unlock()
		return
	}
	p.queued[id] = true
	p.mu.Unlock()
	p.parts[p.partitionOf(partitionKey)].push(id)
}

func (p *Pipeline) dequeued(id int64) {
	p.mu.Lock()
	delete(p.queued, id)
	p.mu.Unlock()
}

func (p *Pipeline) partitionOf(key string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(len(p.parts)))
}

// scan queues pending rows in inbox order: those past the cursor, or, with all, every pending
// row not queued yet (the sweep). At startup the cursor is 0: rows committed before a crash or
// a stop are queued first, in the order they were received. A row not due yet, or behind such a
// row of its key, is left pending (holds, retry.go); a scan of all forgets the holds whose rows
// are no longer pending. It returns how many rows it read. Only Run, then follow, call it: one
// scan at a time.
func (p *Pipeline) scan(ctx context.Context, all bool) (int, error) {
	var after int64
	if !all {
		p.mu.Lock()
		after = p.cursor
		p.mu.Unlock()
	}
	var first map[string]int64 // with all: the first pending row of each key
	gen := p.holds.generation()
	if all {
		first = map[string]int64{}
	}
	now := p.cfg.Now()
	n := 0
	for {
		keys, err := p.cfg.Store.PendingInboxKeys(ctx, after, scanPage)
		if err != nil {
			return n, fmt.Errorf("handlers: scan pending inbox: %w", err)
		}
		for _, k := range keys {
			after = k.ID
			n++
			if first != nil {
				if _, seen := first[k.PartitionKey]; !seen {
					first[k.PartitionKey] = k.ID
					p.holds.dropStale(k.PartitionKey, k.ID)
				}
			}
			if p.holds.waits(k.PartitionKey, k.ID, k.NextAttempt, now) {
				p.advance(k.ID)
				continue
			}
			p.enqueue(k.ID, k.PartitionKey)
		}
		if len(keys) < scanPage {
			if first != nil {
				p.holds.keepOnly(first, gen)
			}
			return n, nil
		}
	}
}

// advance moves the cursor past a row left pending by a scan.
func (p *Pipeline) advance(id int64) {
	p.mu.Lock()
	if id > p.cursor {
		p.cursor = id
	}
	p.mu.Unlock()
}

// follow reads the inbox past the cursor whenever rows are committed; sweeps every pending
// row at SweepInterval (a notification lost to a bug, or a row left pending by an error that
// could not be recorded, must not wait for the next restart), when a hold's row comes due, and
// when a hold goes with rows behind it; and asks the store every RetryPoll for rows that came
// due without this process knowing (a replay by `scribehook inbox replay`).
func (p *Pipeline) follow(ctx context.Context) {
	defer p.wg.Done()
	sweep := time.NewTicker(p.cfg.SweepInterval)
	defer sweep.Stop()
	poll := time.NewTicker(p.cfg.RetryPoll)
	defer poll.Stop()
	due := newDueTimer()
	defer due.stop()
	due.reset(p.holds.nextDue(p.cfg.Now()), p.cfg.Now())
	for {
		all := false
		select {
		case <-ctx.Done():
			return
		case <-p.done:
			return
		case <-p.wake:
		case <-sweep.C:
			all = true
		case <-due.c():
			all = true
		case <-p.rescan:
			all = true
		case <-p.holds.changed:
			due.reset(p.holds.nextDue(p.cfg.Now()), p.cfg.Now())
			continue
		case <-poll.C:
			if !p.dueUnqueued(ctx) {
				continue
			}
			all = true
		}
		_, err := p.scan(ctx, all)
		now := p.cfg.Now()
		due.reset(p.holds.nextDue(now), now)
		if err != nil && !p.stopping() {
			p.log.WithError(err).Warn("reading committed inbox rows failed; trying again")
			ping(p.wake)
			select {
			case <-ctx.Done():
				return
			case <-p.done:
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// dueUnqueued reports whether the store has a row that came due (a retry, a replay) which is
// neither queued nor behind a waiting row of its key: a scan of all rows then queues it.
func (p *Pipeline) dueUnqueued(ctx context.Context) bool {
	keys, err := p.cfg.Store.DueInboxKeys(ctx, p.cfg.Now(), scanPage)
	if err != nil {
		if !p.stopping() {
			p.log.WithError(err).Warn("reading inbox rows due again failed")
		}
		return false
	}
	for _, k := range keys {
		p.mu.Lock()
		queued := p.queued[k.ID]
		p.mu.Unlock()
		if !queued && !p.holds.behind(k.PartitionKey, k.ID) {
			return true
		}
	}
	return false
}

// stopping reports whether Close was called or Run's context ended: an attempt failing then was
// interrupted, which is no fault of its row.
func (p *Pipeline) stopping() bool {
	select {
	case <-p.done:
		return true
	default:
	}
	if ctx := p.runCtx.Load(); ctx != nil && (*ctx).Err() != nil {
		return true
	}
	return false
}

// publishLoop feeds one partition's rows to its handler in batches of what is queued (up to
// groupMax, never waiting for more): the publish blocks until the handler has applied the batch
// (its rows in order, each with its retries) and acks, which keeps session order.
func (p *Pipeline) publishLoop(part *partition) {
	defer p.wg.Done()
	for {
		ids, ok := part.popBatch(groupMax)
		if !ok {
			return
		}
		msg := message.NewMessage(watermill.NewUUID(), nil)
		msg.Metadata.Set(metaInboxIDs, formatIDs(ids))
		middleware.SetCorrelationID("inbox-"+strconv.FormatInt(ids[0], 10), msg)
		err := p.inbox.Publish(part.topic, msg)
		for _, id := range ids {
			p.dequeued(id)
		}
		if err != nil {
			// The bus is closed: the row stays pending in the store for the next start.
			return
		}
	}
}

// partition is an unbounded FIFO of inbox ids: the ids are small, and the rows themselves wait
// in the store, so memory stays small even when processing falls behind.
type partition struct {
	topic  string
	mu     sync.Mutex
	ids    []int64
	closed bool
	wake   chan struct{}
}

func newPartition(topic string) *partition {
	return &partition{topic: topic, wake: make(chan struct{}, 1)}
}

func (q *partition) push(id int64) {
	q.mu.Lock()
	if !q.closed {
		q.ids = append(q.ids, id)
	}
	q.mu.Unlock()
	ping(q.wake)
}

// popBatch takes up to max queued ids, waiting only while none is queued.
func (q *partition) popBatch(max int) ([]int64, bool) {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return nil, false
		}
		if n := min(len(q.ids), max); n > 0 {
			ids := slices.Clone(q.ids[:n])
			q.ids = q.ids[n:]
			q.mu.Unlock()
			return ids, true
		}
		q.mu.Unlock()
		<-q.wake
	}
}

func (q *partition) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	ping(q.wake)
}

// ping signals ch, of capacity 1, without blocking: a signal already pending says the same.
func ping(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
