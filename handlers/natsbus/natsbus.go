// Package natsbus is the NATS JetStream driver of the pipeline's bus (bus.driver nats):
// importing it registers the driver with handlers.RegisterBus, and links the NATS client; a
// program that does not import it does not.
package natsbus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmjetstream "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/jetstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/internal/natsconn"
)

func init() {
	handlers.RegisterBus(handlers.BusNATS, func(ctx context.Context, opts handlers.BusConfig, log watermill.LoggerAdapter) (handlers.BusConn, error) {
		b, err := open(ctx, opts, log)
		if err != nil {
			return nil, err // a nil *natsBus must not become a non-nil BusConn
		}
		return b, nil
	})
}

// natsBus carries notices on a JetStream stream (work-queue retention, on disk) read through
// one durable pull consumer that every replica shares: the server gives each message to one
// puller, and redelivers a message not acknowledged within AckWait (ClaimAfter) to another.
type natsBus struct {
	cfg     handlers.BusConfig
	pub     message.Publisher
	wlog    watermill.LoggerAdapter
	conn    *nats.Conn // publisher and management
	js      jetstream.JetStream
	stream  string
	durable string
	crashed atomic.Bool // tests: a dead process nacks nothing
}

// natsPullBuffer is how many notices each subscription holds ahead of the one it works on: a
// notice held in a buffer is invisible to the other replicas until its AckWait ends, so the
// buffer stays small.
const natsPullBuffer = 2

// natsStreamMaxAge bounds how long the stream keeps a notice nobody read; the sweep finds
// rows whose notice was dropped.
const natsStreamMaxAge = 24 * time.Hour

// natsTimeouts bound the bus's first connect and pace its reconnects.
func natsTimeouts() []nats.Option {
	return []nats.Option{nats.Timeout(handlers.BusConnectTimeout), nats.ReconnectWait(time.Second)}
}

func open(ctx context.Context, cfg handlers.BusConfig, wlog watermill.LoggerAdapter) (*natsBus, error) {
	// OpenBus checked the topic (configs.BusTopicRule).
	if broken := configs.BusNameRule(cfg.Group); broken != "" {
		return nil, fmt.Errorf("group %s", broken)
	}
	nc, err := natsconn.Connect(cfg.URL, "bus", wlog, natsTimeouts()...)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the NATS broker: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	b := &natsBus{cfg: cfg, wlog: wlog, conn: nc, js: js, stream: natsconn.StreamName(cfg.Topic, "scribehook_inbox"), durable: cfg.Group}
	ctx, cancel := context.WithTimeout(ctx, handlers.BusConnectTimeout)
	defer cancel()
	if err := b.ensure(ctx, true); err != nil {
		nc.Close()
		return nil, err
	}
	b.pub, err = natsconn.Publisher(nc, wlog) // the stream is provisioned by ensure
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream publisher: %w", err)
	}
	return b, nil
}

// ensure makes sure the stream and the durable consumer exist. At start (update) the
// consumer takes this replica's settings; a repair only creates what is missing.
func (b *natsBus) ensure(ctx context.Context, update bool) error {
	stream, err := b.js.Stream(ctx, b.stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		stream, err = b.js.CreateStream(ctx, jetstream.StreamConfig{
			Name:        b.stream,
			Description: "scribehook commit notices: inbox rows to process",
			Subjects:    []string{b.cfg.Topic},
			Retention:   jetstream.WorkQueuePolicy,
			Storage:     jetstream.FileStorage,
			MaxAge:      natsStreamMaxAge,
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			stream, err = b.js.Stream(ctx, b.stream) // another replica created it meanwhile
		}
	}
	if err != nil {
		return fmt.Errorf("stream %s: %w", b.stream, err)
	}
	cfg := jetstream.ConsumerConfig{
		Durable:       b.durable,
		Description:   "scribehook replicas: each notice to one of them",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       b.cfg.ClaimAfter,
		MaxDeliver:    -1,
		FilterSubject: b.cfg.Topic,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	if update {
		_, err = stream.CreateOrUpdateConsumer(ctx, cfg)
	} else if _, err = stream.Consumer(ctx, b.durable); errors.Is(err, jetstream.ErrConsumerNotFound) {
		_, err = stream.CreateOrUpdateConsumer(ctx, cfg)
	}
	if err != nil {
		return fmt.Errorf("consumer %s of stream %s: %w", b.durable, b.stream, err)
	}
	return nil
}

// Publish implements handlers.BusConn.
func (b *natsBus) Publish(msg *message.Message) error { return b.pub.Publish(b.cfg.Topic, msg) }

// Subscribe opens n pull subscriptions on one connection.
//
// Watermill's JetStream subscriber (v2.1.3) closes a subscription's output channel as soon as
// the subscriber closes or its context ends, while a message callback may be about to send on
// it: a send on a closed channel, which panics. So the subscriptions run on a context that
// never ends, and their consumer is wrapped in a guard that Close shuts first: no callback
// starts after it (a message then is nacked, for another replica), and Close waits for those
// under way, which the pipeline's consume loops see through, before closing the subscriber.
func (b *natsBus) Subscribe(_ context.Context, n int, onFatal func(error)) (*handlers.Subscriptions, error) {
	nc, err := natsconn.Connect(b.cfg.URL, "bus consumer", b.wlog, natsTimeouts()...)
	if err != nil {
		return nil, err
	}
	guard := newCallbackGuard(func() bool { return !b.crashed.Load() })
	sub, err := wmjetstream.NewSubscriber(wmjetstream.SubscriberConfig{
		Conn:   nc,
		Logger: b.wlog,
		// Past this, Watermill stops waiting for the handler's ack: the server redelivers the
		// notice elsewhere anyway.
		AckWaitTimeout: b.cfg.ClaimAfter,
		ResourceInitializer: func(ctx context.Context, js jetstream.JetStream, _ string) (jetstream.Consumer, func(context.Context, watermill.LoggerAdapter), error) {
			c, err := js.Consumer(ctx, b.stream, b.durable)
			if err != nil {
				return nil, nil, err
			}
			return guardedConsumer{Consumer: c, guard: guard}, nil, nil
		},
		// A notice whose drain failed (the store unreachable) comes back after a pause.
		NakDelay: wmjetstream.NewStaticDelay(time.Second),
		ConsumeOptions: []jetstream.PullConsumeOpt{
			jetstream.PullMaxMessages(natsPullBuffer),
			jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
				// These stop the pull loop for good (the consumer was deleted).
				if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrBadRequest) {
					onFatal(err)
				}
			}),
		},
	})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream subscriber: %w", err)
	}
	closeAll := func() error {
		guard.closeAndWait()
		return sub.Close()
	}
	return handlers.OpenSubscriptions(n, closeAll, func(int) (<-chan *message.Message, error) {
		ch, err := sub.Subscribe(context.Background(), b.cfg.Topic)
		if err != nil {
			return nil, fmt.Errorf("subscribe to %s: %w", b.cfg.Topic, err)
		}
		return ch, nil
	})
}

// Check asks JetStream for the consumer, creating the stream and the consumer again when a
// broker restart lost them (a server without its store directory); the subscriptions then
// start again.
func (b *natsBus) Check(ctx context.Context) (bool, error) {
	if !b.conn.IsConnected() {
		return false, fmt.Errorf("not connected to NATS (%s)", b.conn.Status())
	}
	_, err := b.js.Consumer(ctx, b.stream, b.durable)
	if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrConsumerNotFound) {
		if err := b.ensure(ctx, false); err != nil {
			return false, err
		}
		handlers.LogRecreated(b.wlog, "JetStream stream or consumer", watermill.LogFields{"stream": b.stream, "consumer": b.durable})
		return true, nil
	}
	return false, err
}

// Close implements handlers.BusConn.
func (b *natsBus) Close() error {
	return b.pub.Close() // closes the connection
}

// NackOnStop implements handlers.BusConn: JetStream gives a nacked notice to another puller.
func (b *natsBus) NackOnStop() bool { return true }

// Crash implements handlers.BusConn: from now on nothing is nacked, as by a killed process.
func (b *natsBus) Crash() { b.crashed.Store(true) }

// guardedConsumer passes messages to Watermill's callback while its guard is open.
type guardedConsumer struct {
	jetstream.Consumer
	guard *callbackGuard
}

func (c guardedConsumer) Consume(handler jetstream.MessageHandler, opts ...jetstream.PullConsumeOpt) (jetstream.ConsumeContext, error) {
	return c.Consumer.Consume(func(m jetstream.Msg) {
		if !c.guard.enter() {
			if c.guard.nak() {
				_ = m.Nak() // closing: another replica takes it now rather than after AckWait
			}
			return
		}
		defer c.guard.exit()
		handler(m)
	}, opts...)
}

// callbackGuard counts the callbacks under way and, once closed, lets no new one start.
type callbackGuard struct {
	mu     sync.Mutex
	cond   *sync.Cond
	n      int
	closed bool
	nak    func() bool
}

func newCallbackGuard(nak func() bool) *callbackGuard {
	g := &callbackGuard{nak: nak}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *callbackGuard) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.n++
	return true
}

func (g *callbackGuard) exit() {
	g.mu.Lock()
	g.n--
	g.cond.Broadcast()
	g.mu.Unlock()
}

// closeAndWait shuts the guard and waits for the callbacks under way. Each ends once its
// message is acknowledged or nacked, or after Watermill's AckWaitTimeout.
func (g *callbackGuard) closeAndWait() {
	g.mu.Lock()
	g.closed = true
	for g.n > 0 {
		g.cond.Wait()
	}
	g.mu.Unlock()
}
