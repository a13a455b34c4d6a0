package handlers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/metricreg"
)

// Bus mode: several replicas share one store and one broker.
//
// The receiver commits a delivery, then Committed queues a notice (inbox id, partition key; no
// body) that a publishing goroutine sends to the broker: the receiver never waits for the
// broker, and a notice that cannot be sent (broker down, queue full) is dropped, its row
// staying pending for the sweep. Every replica subscribes through one consumer group, so each
// notice goes to one replica.
//
// A notice of row N of key K "drains K up to N": the pending rows of K with id ≤ N are
// persisted in id order, each with the persist handler. The service sends a
// live session's callbacks one after another, each once the previous one was answered, so a
// session's later delivery has a higher id even when another replica received the earlier
// one: draining the earlier rows first keeps every session in order across replicas, whichever
// replica gets which notice, and whatever the notices' order. A row that fails stops the
// drain (the rows after it wait, whichever replica drains the key: the row is not due) until
// its retry, at its due time, applies it or marks it failed (retry.go); a row applied
// meanwhile by another replica is skipped (Apply locks the row, and answers ErrAlreadyApplied
// once it is done). One replica drains one key at a time. The keys with a row that came due are
// drained by every replica's retryLoop.
//
// The sweep drains, every SweepInterval and at start, the keys that have rows pending for
// longer than SweepGrace: rows whose notice was lost (a replica killed between its commit and
// its publish, a broker down or restarted, a full queue). Each replica sweeps at its own
// jittered times and in its own random order of keys, so replicas seldom drain the same key at
// once; when they do, the row locks make it harmless.

const (
	// DefaultSweepGrace: rows pending for less than this are left to their notices.
	DefaultSweepGrace = configs.DefaultSweepGrace
	// DefaultNoticeQueue bounds the notices waiting to be published.
	DefaultNoticeQueue = configs.DefaultBusQueue

	metaPartitionKey = "partition_key"
	// drainPage is how many pending rows of one key a drain reads at a time.
	drainPage = 100
	// busCheckEvery paces the broker health checks.
	busCheckEvery = 2 * time.Second
	// noticePublishTimeout bounds one publish; noticeFlushTimeout bounds publishing what is
	// still queued when the pipeline closes.
	noticePublishTimeout = 5 * time.Second
	noticeFlushTimeout   = 2 * time.Second
)

// errRowStuck: a row's failed attempt could not even be recorded; in bus mode the rows of its
// key after it wait for the sweep.
var errRowStuck = errors.New("row left pending: its failure could not be recorded")

type notice struct {
	id  int64
	key string
}

type busMode struct {
	p   *Pipeline
	bus *Bus
	log *logrus.Entry

	notices chan notice
	keys    keyLocks

	ctx    context.Context // ends when the pipeline stops: drains, sweeps, subscriptions
	cancel context.CancelFunc
	flush  chan struct{} // closed by Close: publish what is queued, then stop

	up         atomic.Bool // the broker answers
	subscribed atomic.Bool // the subscriptions run
	crashed    atomic.Bool // tests: die without acking
	resub      chan struct{}
	wg         sync.WaitGroup

	published, dropped, received, swept prometheus.Counter
	upGauge                             prometheus.Gauge
}

func newBusMode(p *Pipeline, bus *Bus, wlog watermill.LoggerAdapter) *busMode {
	b := &busMode{
		p: p, bus: bus,
		log:       p.log.WithFields(logrus.Fields{"bus": bus.Driver(), "topic": bus.Topic()}),
		notices:   make(chan notice, p.cfg.NoticeQueue),
		keys:      keyLocks{m: map[string]*keyLock{}},
		flush:     make(chan struct{}),
		resub:     make(chan struct{}, 1),
		published: metricreg.Counter("scribehook_bus_notices_published_total", "Commit notices sent to the broker."),
		dropped:   metricreg.Counter("scribehook_bus_notices_dropped_total", "Commit notices not sent (broker down, queue full): their rows wait for the sweep."),
		received:  metricreg.Counter("scribehook_bus_notices_received_total", "Commit notices this replica took from the broker."),
		swept:     metricreg.Counter("scribehook_bus_swept_rows_total", "Inbox rows applied by the sweep rather than by their notice."),
		upGauge:   metricreg.Gauge("scribehook_bus_up", "1 while the broker answers and this replica's subscriptions run."),
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.up.Store(true) // OpenBus reached it
	return b
}

func (b *busMode) collectors() []prometheus.Collector {
	return []prometheus.Collector{b.published, b.dropped, b.received, b.swept, b.upGauge}
}

// run starts the publishers, the subscriptions, the sweep, the retries and the health checks.
func (b *busMode) run() {
	n := b.p.cfg.Partitions
	b.wg.Add(n + 4)
	for range n {
		go b.publishLoop()
	}
	go b.supervise(n)
	go b.sweepLoop()
	go b.retryLoop()
	go b.healthLoop()
}

// ready: the broker answers and the subscriptions run.
func (b *busMode) ready() bool { return b.up.Load() && b.subscribed.Load() }

// close stops everything: notices still queued are published (briefly), drains in progress
// are interrupted (their rows stay pending, their notices unacknowledged, for another replica
// or the next start), the subscriptions and the broker connections are closed.
func (b *busMode) close() error {
	select {
	case <-b.flush:
	default:
		close(b.flush)
	}
	b.cancel()
	b.wg.Wait()
	b.upGauge.Set(0)
	return b.bus.Close()
}

// crash stops like a killed process: no notice is acknowledged nor published any more.
func (b *busMode) crash() {
	b.crashed.Store(true)
	b.bus.drv.Crash()
}

// notify queues a notice without blocking.
func (b *busMode) notify(id int64, key string) {
	if b.ctx.Err() != nil {
		return
	}
	select {
	case b.notices <- notice{id, key}:
	default:
		b.dropped.Inc()
	}
}

func (b *busMode) publishLoop() {
	defer b.wg.Done()
	for {
		select {
		case n := <-b.notices:
			b.publish(n)
		case <-b.flush:
			b.publishQueued()
			return
		}
	}
}

// publishQueued publishes, at close, the notices still queued, until noticeFlushTimeout; the
// rest are dropped, for the sweep.
func (b *busMode) publishQueued() {
	deadline := time.Now().Add(noticeFlushTimeout)
	for {
		select {
		case n := <-b.notices:
			if b.crashed.Load() || time.Now().After(deadline) {
				b.dropped.Inc()
				continue
			}
			b.publish(n)
		default:
			return
		}
	}
}

func (b *busMode) publish(n notice) {
	if !b.up.Load() || b.crashed.Load() {
		b.dropped.Inc() // the sweep finds the row
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), noticePublishTimeout)
	defer cancel()
	msg := message.NewMessageWithContext(ctx, watermill.NewUUID(), nil)
	msg.Metadata.Set(metaInboxID, strconv.FormatInt(n.id, 10))
	msg.Metadata.Set(metaPartitionKey, n.key)
	if err := b.bus.drv.Publish(msg); err != nil {
		b.dropped.Inc()
		// Until the health check sees the broker again, notices are dropped at once instead of
		// each waiting for its timeout.
		if b.up.Swap(false) {
			b.log.WithError(err).Warn("bus: publishing a notice failed; rows wait for the sweep until the broker answers")
			b.upGauge.Set(0)
		}
		return
	}
	b.published.Inc()
}

// supervise keeps the subscriptions open: it opens them again when the broker dropped them.
func (b *busMode) supervise(n int) {
	defer b.wg.Done()
	wait := 500 * time.Millisecond
	for b.ctx.Err() == nil {
		subs, err := b.bus.drv.Subscribe(b.ctx, n, func(err error) {
			b.log.WithError(err).Warn("bus: the broker ended a subscription; subscribing again")
			b.resubscribe()
		})
		if err != nil {
			if b.ctx.Err() != nil {
				return
			}
			b.setSubscribed(false)
			b.log.WithError(scrubSecret(err, b.bus.cfg.URL)).Debug("bus: subscribe failed; trying again")
			select {
			case <-b.ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, 5*time.Second)
			continue
		}
		wait = 500 * time.Millisecond
		b.setSubscribed(true)
		ended := make(chan struct{}, len(subs.chans))
		var loops sync.WaitGroup
		for _, ch := range subs.chans {
			loops.Go(func() {
				b.consume(ch)
				ended <- struct{}{}
			})
		}
		select {
		case <-b.ctx.Done():
		case <-ended: // a subscription ended by itself
		case <-b.resub:
		}
		if b.ctx.Err() == nil {
			b.setSubscribed(false)
		}
		// The consume loops read on until the subscriptions close their channels: a message
		// handed over meanwhile is let go (stopping) or handled (resubscribing).
		_ = subs.close()
		loops.Wait()
		// Drain the signals of the generation that ended.
		select {
		case <-b.resub:
		default:
		}
	}
}

func (b *busMode) resubscribe() { ping(b.resub) }

func (b *busMode) setSubscribed(on bool) {
	b.subscribed.Store(on)
	b.setGauge()
}

func (b *busMode) setGauge() {
	if b.ready() {
		b.upGauge.Set(1)
	} else {
		b.upGauge.Set(0)
	}
}

// consume handles one subscription's notices, one at a time, until its channel closes. Once
// the pipeline stops, notices are let go without being processed.
func (b *busMode) consume(ch <-chan *message.Message) {
	for msg := range ch {
		if b.ctx.Err() != nil {
			b.release(msg)
			continue
		}
		b.handle(msg)
	}
}

// release lets a notice go unprocessed at a stop: it stays with the broker for another
// replica. JetStream offers a nacked message again at once (after nats.SubscriberConfig.NakDelay); Redis would only
// offer it to this closing subscription, so there it waits for its claim. A crashed process
// says nothing.
func (b *busMode) release(msg *message.Message) {
	if !b.crashed.Load() && b.bus.drv.NackOnStop() {
		msg.Nack()
	}
}

// handle drains the notice's key up to its row, and acknowledges the notice unless the drain
// was cut short (stop, store unreachable): the broker then offers it again.
func (b *busMode) handle(msg *message.Message) {
	id, err := strconv.ParseInt(msg.Metadata.Get(metaInboxID), 10, 64)
	if err != nil {
		b.log.WithField("message_uuid", msg.UUID).Warn("bus: notice without a row id, dropped")
		msg.Ack()
		return
	}
	key := msg.Metadata.Get(metaPartitionKey)
	b.received.Inc()
	// The drain ends with the pipeline, not with the message: Watermill's JetStream subscriber
	// cancels a message's context once it stops waiting for the ack (nats.SubscriberConfig.AckWaitTimeout), which a
	// long drain (a key's backlog) may outlast. Its late ack is harmless: the broker has
	// offered the notice again, and that drain finds the rows done.
	ctx, cancel := context.WithCancel(b.ctx)
	_, err = b.drainKey(ctx, key, id)
	cancel()
	if b.crashed.Load() {
		return // a dead process acknowledges nothing
	}
	switch {
	case err == nil:
		msg.Ack()
	case b.ctx.Err() != nil:
		b.release(msg)
	case errors.Is(err, errRowStuck):
		// Retrying at once would fail the same way: the sweep tries again later.
		b.log.WithFields(logrus.Fields{"inbox_id": id, "partition_key": key}).Warn("bus: " + err.Error() + "; the sweep tries again")
		msg.Ack()
	default:
		b.log.WithError(err).WithFields(logrus.Fields{"inbox_id": id, "partition_key": key}).Warn("bus: drain failed; the notice comes back")
		msg.Nack()
	}
}

// drainKey persists the pending rows of key with id ≤ upto in id order and returns how many it
// handled (applied, found done, or marked failed). Consecutive live messages are applied in
// groups (applyRows); a row that fails is retried alone, and if it is left pending (its
// failure could not be recorded) the drain stops there: the rows after it wait for the sweep.
func (b *busMode) drainKey(ctx context.Context, key string, upto int64) (int, error) {
	unlock, err := b.keys.lock(ctx, key)
	if err != nil {
		return 0, err
	}
	defer unlock()
	handled := 0
	var last int64
	for {
		rows, err := b.p.cfg.Store.PendingInboxByKey(ctx, key, upto, drainPage)
		if err != nil {
			return handled, fmt.Errorf("pending rows of %q: %w", key, err)
		}
		if len(rows) == 0 {
			b.p.holds.dropStale(key, math.MaxInt64)
			return handled, nil
		}
		// The key's first pending row: a hold by an earlier row is another replica's applied one.
		b.p.holds.dropStale(key, rows[0].ID)
		ids := make([]int64, len(rows))
		for i, r := range rows {
			if r.ID <= last {
				// Handled in this drain yet still pending: never loop on it.
				return handled, errRowStuck
			}
			ids[i] = r.ID
		}
		var out []*message.Message
		n, err := b.p.applyRows(ctx, ids, rows, &out, b.p.persistRow)
		handled += n
		if len(out) > 0 {
			_ = b.p.events.Publish(TopicEvents, out...)
		}
		if err != nil {
			return handled, err
		}
		if b.p.holds.held(key) {
			// A row of the key waits for its next attempt (retry.go): the rows after it wait
			// too, and are drained when it is due.
			return handled, nil
		}
		last = rows[len(rows)-1].ID
		if len(rows) < drainPage {
			return handled, nil
		}
	}
}

// drainLater drains key in the background, every pending row of it: the rows left behind a
// hold that went.
func (b *busMode) drainLater(key string) {
	if b.ctx.Err() != nil {
		return
	}
	b.wg.Go(func() {
		if _, err := b.drainKey(b.ctx, key, math.MaxInt64); err != nil && b.ctx.Err() == nil && !errors.Is(err, errRowStuck) {
			b.log.WithError(err).WithField("partition_key", key).Warn("drain after a retry failed; the sweep tries again")
		}
	})
}

// retryLoop drains the keys of rows that came due (DueInboxKeys: retries, replays, whichever
// replica or process recorded them), at the due time of this replica's earliest hold and every
// RetryPoll.
func (b *busMode) retryLoop() {
	defer b.wg.Done()
	p := b.p
	poll := time.NewTicker(p.cfg.RetryPoll)
	defer poll.Stop()
	due := newDueTimer()
	defer due.stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-p.holds.changed:
			now := p.cfg.Now()
			due.reset(p.holds.nextDue(now), now)
			continue
		case <-poll.C:
		case <-due.c():
		}
		b.drainDue()
		now := p.cfg.Now()
		due.reset(p.holds.nextDue(now), now)
	}
}

// drainDue drains every key with a row that came due and is not behind a waiting row of its
// key, with Partitions drains at once.
func (b *busMode) drainDue() {
	ctx := b.ctx
	keys, err := b.p.cfg.Store.DueInboxKeys(ctx, b.p.cfg.Now(), scanPage)
	if err != nil {
		if ctx.Err() == nil {
			b.log.WithError(err).Warn("reading inbox rows due again failed")
		}
		return
	}
	seen := map[string]bool{}
	work := make(chan string)
	var wg sync.WaitGroup
	for range b.p.cfg.Partitions {
		wg.Go(func() {
			for key := range work {
				if _, err := b.drainKey(ctx, key, math.MaxInt64); err != nil && ctx.Err() == nil && !errors.Is(err, errRowStuck) {
					b.log.WithError(err).WithField("partition_key", key).Warn("drain of a retry failed")
				}
			}
		})
	}
	for _, k := range keys {
		if seen[k.PartitionKey] || b.p.holds.behind(k.PartitionKey, k.ID) {
			continue
		}
		seen[k.PartitionKey] = true
		select {
		case work <- k.PartitionKey:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
}

// sweepLoop drains, at start then at jittered intervals, the keys of rows left pending for
// longer than SweepGrace.
func (b *busMode) sweepLoop() {
	defer b.wg.Done()
	b.sweep() // at start too: rows left by a previous run
	for {
		interval := jitter(b.p.cfg.SweepInterval)
		if !b.ready() {
			// Notices are not flowing: the sweep is how rows get processed meanwhile.
			interval = min(interval, jitter(max(b.p.cfg.SweepGrace, time.Second)))
		}
		select {
		case <-b.ctx.Done():
			return
		case <-time.After(interval):
		}
		b.sweep()
	}
}

// jitter spreads d over ±20 %, so that replicas do not sweep in step.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// sweep drains every key that has a row pending for longer than SweepGrace, up to its newest
// such row, with Partitions drains at once, in a random order of keys.
func (b *busMode) sweep() {
	ctx := b.ctx
	cutoff := b.p.cfg.Now().Add(-b.p.cfg.SweepGrace) // received_at is on the kit's clock
	tops := map[string]int64{}
	var after int64
	for {
		// Keys and receipt times only: the rows' bodies are read by the drains, once.
		rows, err := b.p.cfg.Store.PendingInboxKeys(ctx, after, scanPage)
		if err != nil {
			if ctx.Err() == nil {
				b.log.WithError(err).Warn("sweep: reading pending inbox rows failed")
			}
			return
		}
		for _, r := range rows {
			after = r.ID
			if !r.ReceivedAt.Before(cutoff) {
				continue
			}
			if r.ID > tops[r.PartitionKey] {
				tops[r.PartitionKey] = r.ID
			}
		}
		if len(rows) < scanPage {
			break
		}
	}
	if len(tops) == 0 {
		return
	}
	keys := make([]string, 0, len(tops))
	for k := range tops {
		keys = append(keys, k)
	}
	rand.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	work := make(chan string)
	var (
		wg      sync.WaitGroup
		handled atomic.Int64
	)
	for range b.p.cfg.Partitions {
		wg.Go(func() {
			for key := range work {
				n, err := b.drainKey(ctx, key, tops[key])
				handled.Add(int64(n))
				if err != nil && ctx.Err() == nil && !errors.Is(err, errRowStuck) {
					b.log.WithError(err).WithField("partition_key", key).Warn("sweep: drain failed")
				}
			}
		})
	}
	for _, k := range keys {
		select {
		case work <- k:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	if n := handled.Load(); n > 0 {
		b.swept.Add(float64(n))
		b.log.WithFields(logrus.Fields{"rows": n, "keys": len(keys)}).Info("sweep: processed rows whose notices were late or lost")
	}
}

// healthLoop checks the broker every few seconds: readiness follows it, and what a broker
// restart lost is created again.
func (b *busMode) healthLoop() {
	defer b.wg.Done()
	t := time.NewTicker(busCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(b.ctx, BusConnectTimeout)
		resub, err := b.bus.drv.Check(ctx)
		cancel()
		if b.ctx.Err() != nil {
			return
		}
		switch was := b.up.Swap(err == nil); {
		case err != nil && was:
			b.log.WithError(scrubSecret(err, b.bus.cfg.URL)).Warn("bus: the broker does not answer; deliveries are still stored, and processed by the sweep until it is back")
		case err == nil && !was:
			b.log.Info("bus: the broker answers again")
		}
		b.setGauge()
		if resub {
			b.resubscribe()
		}
	}
}

// keyLocks serialises the drains of one key within the process.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	ch   chan struct{}
	refs int
}

func (k *keyLocks) lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	l := k.m[key]
	if l == nil {
		l = &keyLock{ch: make(chan struct{}, 1)}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()
	select {
	case l.ch <- struct{}{}:
		return func() {
			<-l.ch
			k.release(key, l)
		}, nil
	case <-ctx.Done():
		k.release(key, l)
		return nil, ctx.Err()
	}
}

func (k *keyLocks) release(key string, l *keyLock) {
	k.mu.Lock()
	l.refs--
	if l.refs == 0 {
		delete(k.m, key)
	}
	k.mu.Unlock()
}

// runBus is Run with a Bus: once the router runs, the bus's goroutines start, and Run waits
// for the end.
func (p *Pipeline) runBus(ctx context.Context, routerErr <-chan error) error {
	p.mu.Lock()
	if p.stopping() {
		p.mu.Unlock()
		return nil
	}
	// Run's context ends the bus's work too, as it ends the GoChannel path's reading.
	context.AfterFunc(ctx, p.bus.cancel)
	p.bus.run()
	p.mu.Unlock()
	p.log.WithFields(logrus.Fields{"bus": p.bus.bus.Driver(), "topic": p.bus.bus.Topic(), "broker": p.bus.bus.Redacted()}).
		Info("processing notices from the broker")
	return p.wait(ctx, routerErr)
}
