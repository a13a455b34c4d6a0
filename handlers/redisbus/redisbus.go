// Package redisbus is the Redis Streams driver of the pipeline's bus (bus.driver
// redisstream): importing it registers the driver with handlers.RegisterBus, and links the
// Redis client; a program that does not import it does not.
package redisbus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/scribehook/scribehook/handlers"
)

func init() {
	handlers.RegisterBus(handlers.BusRedisStream, func(ctx context.Context, opts handlers.BusConfig, log watermill.LoggerAdapter) (handlers.BusConn, error) {
		b, err := open(ctx, opts, log)
		if err != nil {
			return nil, err // a nil *redisBus must not become a non-nil BusConn
		}
		return b, nil
	})
}

// redisBus carries notices on a Redis stream read by one consumer group: XREADGROUP gives each
// entry to one consumer, an entry stays in the group's pending list until acknowledged, and
// the entries a consumer left pending longer than ClaimAfter (its replica died) are claimed by
// the others (Watermill's XPENDING/XCLAIM loop).
type redisBus struct {
	cfg    handlers.BusConfig
	pub    message.Publisher
	wlog   watermill.LoggerAdapter
	client *redis.Client
}

// sharedRedis is the one client of the bus, handed to Watermill's publisher and subscribers,
// which close their client when they close: the bus closes it once, last.
type sharedRedis struct{ redis.UniversalClient }

func (sharedRedis) Close() error { return nil }

func open(ctx context.Context, cfg handlers.BusConfig, wlog watermill.LoggerAdapter) (*redisBus, error) {
	opts, err := redis.ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("not a Redis URL (redis://[:password@]host:port/db): %w", err)
	}
	client := redis.NewClient(opts)
	b := &redisBus{cfg: cfg, wlog: wlog, client: client}
	ctx, cancel := context.WithTimeout(ctx, handlers.BusConnectTimeout)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("cannot reach the Redis broker: %w", err)
	}
	if _, err := b.ensureGroup(ctx); err != nil {
		_ = client.Close()
		return nil, err
	}
	b.pub, err = redisstream.NewPublisher(redisstream.PublisherConfig{
		Client: sharedRedis{client}, DefaultMaxlen: cfg.MaxLen,
	}, wlog)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("redis publisher: %w", err)
	}
	return b, nil
}

// ensureGroup creates the stream and the consumer group unless they exist, and reports
// whether it created the group. A group created after a broker restart that lost the stream
// reads the new stream from its start: every entry in it is a notice nobody read.
func (b *redisBus) ensureGroup(ctx context.Context) (bool, error) {
	err := b.client.XGroupCreateMkStream(ctx, b.cfg.Topic, b.cfg.Group, "0").Err()
	if err == nil {
		return true, nil
	}
	if strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return false, nil
	}
	return false, fmt.Errorf("create the consumer group %s of stream %s: %w", b.cfg.Group, b.cfg.Topic, err)
}

// Publish implements handlers.BusConn.
func (b *redisBus) Publish(msg *message.Message) error { return b.pub.Publish(b.cfg.Topic, msg) }

// Subscribe implements handlers.BusConn.
func (b *redisBus) Subscribe(ctx context.Context, n int, _ func(error)) (*handlers.Subscriptions, error) {
	claimEvery := max(b.cfg.ClaimAfter/6, 100*time.Millisecond)
	var all []*redisstream.Subscriber
	closeAll := func() error {
		var errs []error
		for _, s := range all {
			errs = append(errs, s.Close())
		}
		return errors.Join(errs...)
	}
	return handlers.OpenSubscriptions(n, closeAll, func(i int) (<-chan *message.Message, error) {
		s, err := redisstream.NewSubscriber(redisstream.SubscriberConfig{
			Client:        sharedRedis{b.client},
			Consumer:      fmt.Sprintf("%s-%d", b.cfg.Consumer, i),
			ConsumerGroup: b.cfg.Group,
			// A notice whose drain failed (the store unreachable) is offered again after a
			// pause rather than at once, in a loop.
			NackResendSleep: time.Second,
			// Every read blocks at most this long, so that a closed subscription's reader
			// stops soon (go-redis does not cancel a blocked read).
			BlockTime:                     time.Second,
			DisableIndefiniteInitialBlock: true,
			ClaimInterval:                 claimEvery,
			MaxIdleTime:                   b.cfg.ClaimAfter,
			OldestId:                      "0",
		}, b.wlog)
		if err != nil {
			return nil, fmt.Errorf("redis subscriber: %w", err)
		}
		all = append(all, s)
		ch, err := s.Subscribe(ctx, b.cfg.Topic)
		if err != nil {
			return nil, fmt.Errorf("subscribe to stream %s: %w", b.cfg.Topic, err)
		}
		return ch, nil
	})
}

// Check pings Redis and recreates the consumer group when a restart lost it (a Redis without
// persistence): the subscriptions' reads fail with NOGROUP until then, and recover by
// themselves after.
func (b *redisBus) Check(ctx context.Context) (bool, error) {
	if err := b.client.Ping(ctx).Err(); err != nil {
		return false, err
	}
	created, err := b.ensureGroup(ctx)
	if err != nil {
		return false, err
	}
	if created {
		handlers.LogRecreated(b.wlog, "consumer group", watermill.LogFields{"stream": b.cfg.Topic, "group": b.cfg.Group})
	}
	return false, nil
}

// Close implements handlers.BusConn.
func (b *redisBus) Close() error {
	err := b.pub.Close()
	return errors.Join(err, b.client.Close())
}

// NackOnStop implements handlers.BusConn: a nack goes back to the same, closing, consumer.
func (b *redisBus) NackOnStop() bool { return false }

// Crash implements handlers.BusConn; a Redis consumer has nothing to stop.
func (b *redisBus) Crash() {}
