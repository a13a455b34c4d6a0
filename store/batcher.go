package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrBatcherClosed is returned by Submit after Close.
var ErrBatcherClosed = errors.New("batcher closed")

// Defaults of BatcherOptions.
const DefaultMaxBatch = 256

// BatcherOptions tunes group commit.
type BatcherOptions struct {
	// MaxBatch bounds the deliveries of one Ingest call (default 256), so one transaction
	// stays short and a failure fails few callers.
	MaxBatch int
	// MaxWait is how long the committer waits for more deliveries before committing a batch
	// that is not full. The default, 0, commits as soon as the store is free: batches then
	// form by themselves from what arrives during the previous commit, which adds no latency
	// when traffic is light.
	MaxWait time.Duration
	// OnCommit, when set, is called after every Ingest with the batch size, its duration and
	// its error (for metrics). It runs on the committer goroutine and must be quick.
	OnCommit func(n int, d time.Duration, err error)
}

// Batcher groups concurrent Submits into shared Ingest calls (group commit): a durable commit
// costs one fsync whether it holds one delivery or hundreds, so sharing it lets ingestion
// scale past one fsync per request. One committer goroutine runs Ingest; what arrives while it
// runs queues and becomes the next batch.
type Batcher struct {
	s    Ingester
	opts BatcherOptions

	mu     sync.Mutex
	queue  []*submission
	closed bool

	wake chan struct{} // capacity 1: "the queue or closed changed"
	done chan struct{} // closed when the committer has drained and stopped
}

type submission struct {
	ctx  context.Context
	d    Delivery
	res  IngestResult
	err  error
	done chan struct{} // closed once res or err is set
}

// NewBatcher starts the committer. Close stops it; the Batcher never closes s.
func NewBatcher(s Ingester, opts BatcherOptions) *Batcher {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.MaxWait < 0 {
		opts.MaxWait = 0
	}
	b := &Batcher{
		s:    s,
		opts: opts,
		wake: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	go b.run()
	return b
}

// Submit queues d for the next batch and waits until that batch is committed, returning d's
// result, or until it failed, returning the batch's error (every delivery of a failed batch
// gets it: nothing of the batch was committed).
//
// When ctx ends first, Submit returns ctx's error at once. A delivery still queued is then
// left out of its batch; one already being committed may be stored all the same: the caller
// answers with an error, the sender retries, and the dedupe key makes the retry a duplicate.
func (b *Batcher) Submit(ctx context.Context, d Delivery) (IngestResult, error) {
	if d.Quarantine == "" && d.DedupeKey == "" {
		return IngestResult{}, errors.New("submit delivery: empty dedupe key")
	}
	if err := ctx.Err(); err != nil {
		return IngestResult{}, fmt.Errorf("submit delivery: %w", err)
	}
	sub := &submission{ctx: ctx, d: d, done: make(chan struct{})}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return IngestResult{}, fmt.Errorf("submit delivery: %w", ErrBatcherClosed)
	}
	b.queue = append(b.queue, sub)
	b.mu.Unlock()
	b.signal()
	select {
	case <-sub.done:
		return sub.res, sub.err
	case <-ctx.Done():
		return IngestResult{}, fmt.Errorf("submit delivery: %w", ctx.Err())
	}
}

// Queued is the number of deliveries waiting for a batch (not counting the batch being
// committed): a gauge of how far ingestion lags behind arrivals.
func (b *Batcher) Queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// Close stops accepting deliveries, commits everything already queued, and returns once the
// committer has stopped. It does not close the Store.
func (b *Batcher) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.signal()
	<-b.done
	return nil
}

func (b *Batcher) signal() {
	select {
	case b.wake <- struct{}{}:
	default: // a wake-up is already pending; the committer re-reads the queue anyway
	}
}

// takingIngester is an Ingester that begins its ingest transaction before asking for the
// deliveries (store/sqlite): the batch is then taken once the writer is free, and holds what
// arrived while it was busy (with a group of applies, say) instead of leaving it for the next
// transaction, one more wait for the writer later.
type takingIngester interface {
	IngestTaking(ctx context.Context, take func() []Delivery) ([]IngestResult, error)
}

func (b *Batcher) run() {
	defer close(b.done)
	ti, taking := b.s.(takingIngester)
	for {
		if taking && b.opts.MaxWait <= 0 {
			if !b.waitQueued() {
				return
			}
			b.commitTaking(ti)
			continue
		}
		batch, ok := b.next()
		if !ok {
			return
		}
		b.commit(batch)
	}
}

// waitQueued waits until a delivery is queued; false means closed and drained.
func (b *Batcher) waitQueued() bool {
	for {
		b.mu.Lock()
		queued, closed := len(b.queue), b.closed
		b.mu.Unlock()
		if queued > 0 {
			return true
		}
		if closed {
			return false
		}
		<-b.wake
	}
}

// commitTaking is commit of the batch taken once the store's transaction has begun.
func (b *Batcher) commitTaking(ti takingIngester) {
	var batch []*submission
	var ds []Delivery
	taken := false
	takeBatch := func() []Delivery {
		b.mu.Lock()
		batch = b.take(nil)
		b.mu.Unlock()
		ds, taken = deliveriesOf(batch), true
		return ds
	}
	start := time.Now()
	res, err := ti.IngestTaking(context.Background(), takeBatch)
	if err != nil && !taken {
		// The transaction did not begin: what is queued fails with it, as a batch would.
		takeBatch()
	}
	b.settle(batch, ds, res, err, start)
}

// next waits for a batch; false means closed and drained.
func (b *Batcher) next() ([]*submission, bool) {
	var batch []*submission
	for {
		b.mu.Lock()
		batch = b.take(batch)
		closed := b.closed
		b.mu.Unlock()
		if len(batch) > 0 {
			break
		}
		if closed {
			return nil, false
		}
		<-b.wake
	}
	if b.opts.MaxWait <= 0 || len(batch) >= b.opts.MaxBatch {
		return batch, true
	}
	timer := time.NewTimer(b.opts.MaxWait)
	defer timer.Stop()
	for len(batch) < b.opts.MaxBatch {
		select {
		case <-timer.C:
			return batch, true
		case <-b.wake:
			b.mu.Lock()
			batch = b.take(batch)
			closed := b.closed
			b.mu.Unlock()
			if closed {
				// Draining: waiting for more would only delay Close.
				return batch, true
			}
		}
	}
	return batch, true
}

// take moves queued submissions into batch, up to MaxBatch, dropping those whose caller has
// already given up. b.mu must be held.
func (b *Batcher) take(batch []*submission) []*submission {
	n := 0
	for _, sub := range b.queue {
		if len(batch) == b.opts.MaxBatch {
			break
		}
		n++
		if sub.ctx.Err() != nil {
			continue
		}
		batch = append(batch, sub)
	}
	// Copy the rest down so the queue's array does not pin delivered bodies.
	rest := copy(b.queue, b.queue[n:])
	clear(b.queue[rest:])
	b.queue = b.queue[:rest]
	return batch
}

func (b *Batcher) commit(batch []*submission) {
	ds := deliveriesOf(batch)
	// Not any caller's context: one caller giving up must not abort the others' commit.
	start := time.Now()
	res, err := b.s.Ingest(context.Background(), ds)
	b.settle(batch, ds, res, err, start)
}

func deliveriesOf(batch []*submission) []Delivery {
	ds := make([]Delivery, len(batch))
	for i, sub := range batch {
		ds[i] = sub.d
	}
	return ds
}

// settle gives each submission of a committed (or failed) batch its result.
func (b *Batcher) settle(batch []*submission, ds []Delivery, res []IngestResult, err error, start time.Time) {
	if len(batch) == 0 && err == nil {
		return // every caller had given up: nothing was written
	}
	if err == nil && len(res) != len(ds) {
		err = fmt.Errorf("ingest returned %d results for %d deliveries", len(res), len(ds))
	}
	if b.opts.OnCommit != nil {
		b.opts.OnCommit(len(ds), time.Since(start), err)
	}
	if err != nil {
		err = fmt.Errorf("group commit of %d deliveries: %w", len(ds), err)
	}
	for i, sub := range batch {
		if err != nil {
			sub.err = err
		} else {
			sub.res = res[i]
		}
		close(sub.done)
	}
}
