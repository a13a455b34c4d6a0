package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/wmlog"
)

// Bus drivers: besides the in-process GoChannel (no Bus at all), a broker shared by several
// replicas.
const (
	BusRedisStream = "redisstream"
	BusNATS        = "nats"
)

// Defaults of BusConfig: the configuration's (bus section), so that a program building the
// configuration itself gets what serve gets.
const (
	// DefaultBusTopic is the Redis stream, or the NATS subject, of commit notices.
	DefaultBusTopic = configs.DefaultBusTopic
	// DefaultBusGroup is the Redis consumer group, or the JetStream durable consumer, that every
	// replica joins: each notice goes to one replica of the group.
	DefaultBusGroup = configs.DefaultBusGroup
	// DefaultClaimAfter is how long a notice may stay delivered but unacknowledged before the
	// broker gives it to another replica (its replica died, or is stuck).
	DefaultClaimAfter = configs.DefaultClaimAfter
	// DefaultRedisMaxLen bounds the Redis stream (approximately): notices are small, and a
	// notice trimmed before it was read only delays its row until the sweep.
	DefaultRedisMaxLen = configs.DefaultBusMaxLen
)

// BusConnectTimeout bounds connecting to the broker at start, and each health check.
const BusConnectTimeout = 5 * time.Second

// BusOptions is BusConfig's former name.
//
// Deprecated: use BusConfig; BusOptions goes in the next release.
type BusOptions = BusConfig

// BusConfig says how to reach the broker that carries commit notices between replicas; its
// optional fields take the defaults when zero.
type BusConfig struct {
	// Driver is a registered broker (RegisterBus): BusRedisStream once the program imports
	// handlers/redisbus, BusNATS (JetStream) once it imports handlers/natsbus.
	Driver string
	// URL is the broker: redis://[:password@]host:6379/0, nats://[user:password@]host:4222.
	URL string
	// Topic is the Redis stream, or the NATS subject, of the notices (default DefaultBusTopic).
	// On NATS its stream is named after it with '.' replaced by '_' (scribehook_inbox).
	Topic string
	// Group is the consumer group (Redis) or durable consumer (JetStream) shared by every
	// replica (default DefaultBusGroup).
	Group string
	// Consumer names this replica in the group (Redis; default host-pid-random). Each
	// subscription of the replica is Consumer-<n>.
	Consumer string
	// ClaimAfter is how long a delivered notice may stay unacknowledged before another replica
	// takes it (default DefaultClaimAfter). Redis: the redisstream.SubscriberConfig.MaxIdleTime after
	// which pending entries are claimed (XPENDING/XCLAIM, looked for every ClaimAfter/6). JetStream: the consumer's
	// jetstream.ConsumerConfig.AckWait, after which the server redelivers.
	ClaimAfter time.Duration
	// MaxLen bounds the Redis stream, approximately (default DefaultRedisMaxLen; negative: no
	// bound).
	MaxLen int64
	// Logger receives the broker's connection troubles (rate-limited).
	Logger logrus.FieldLogger
}

func (c *BusConfig) setDefaults() {
	if c.Topic == "" {
		c.Topic = DefaultBusTopic
	}
	if c.Group == "" {
		c.Group = DefaultBusGroup
	}
	if c.Consumer == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "scribehook"
		}
		c.Consumer = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), watermill.NewShortUUID()[:6])
	}
	if c.ClaimAfter <= 0 {
		c.ClaimAfter = DefaultClaimAfter
	}
	if c.MaxLen == 0 {
		c.MaxLen = DefaultRedisMaxLen
	}
	if c.MaxLen < 0 {
		c.MaxLen = 0 // Watermill: no MAXLEN
	}
	c.Logger = logx.OrStandard(c.Logger)
}

// Bus is an open connection to the broker of commit notices. handlers.New takes it in
// Config.Bus, and the pipeline closes it.
type Bus struct {
	cfg  BusConfig
	drv  BusConn
	once sync.Once
	err  error
}

// BusConn is an open connection to one kind of broker, as the pipeline uses it. A bus driver
// (handlers/redisbus, handlers/natsbus) implements it and registers its BusOpener.
type BusConn interface {
	// Publish sends one notice to the configuration's Topic; the message's context bounds the wait
	// where the driver can.
	Publish(msg *message.Message) error
	// Subscribe opens n subscriptions of the shared group. Closing them ends their channels and
	// leaves unacknowledged notices with the broker, for another subscription to take.
	// onFatal is called when the broker drops a subscription for good.
	Subscribe(ctx context.Context, n int, onFatal func(error)) (*Subscriptions, error)
	// Check reports whether the broker answers, and repairs what a broker restart can lose (a
	// Redis consumer group, a JetStream stream or consumer); resubscribe says the current
	// subscriptions cannot recover by themselves.
	Check(ctx context.Context) (resubscribe bool, err error)
	// NackOnStop says whether a nack hands a notice to another subscriber at once (JetStream),
	// rather than back to the same, closing, subscription (Redis).
	NackOnStop() bool
	// Crash makes the driver behave like a killed process (tests): it nacks nothing more.
	Crash()
	// Close closes the publisher, the subscriptions' connections and the client.
	Close() error
}

// BusOpener connects to the broker of opts, whose defaults are set and whose URL and topic
// OpenBus checked, and makes sure its stream and consumer group exist. log is the bus's
// Watermill logger, rate-limited. Its errors need not hide the URL: OpenBus scrubs them.
type BusOpener func(ctx context.Context, opts BusConfig, log watermill.LoggerAdapter) (BusConn, error)

// ErrUnknownBusDriver is wrapped by OpenBus's error for a driver no imported package
// registered.
var ErrUnknownBusDriver = errors.New("unknown bus driver")

// The registry of bus drivers is one of the package's globals on purpose, as database/sql's
// drivers are: a driver package registers itself from init, so that a program links the
// broker clients (Redis, NATS) only by importing their driver.
var (
	busMu      sync.RWMutex
	busDrivers = map[string]BusOpener{}
)

// busImports are the packages of this module that register a bus driver, for the error of a
// driver the program did not import.
var busImports = map[string]string{
	BusRedisStream: "github.com/scribehook/scribehook/handlers/redisbus",
	BusNATS:        "github.com/scribehook/scribehook/handlers/natsbus",
}

// RegisterBus makes a broker available to OpenBus as driver (bus.driver in the
// configuration). It panics when driver is empty or "gochannel" (the in-process bus, which
// needs no Bus), open is nil, or the driver is taken.
func RegisterBus(driver string, open BusOpener) {
	busMu.Lock()
	defer busMu.Unlock()
	if driver == "" || driver == "gochannel" || open == nil {
		panic("handlers: RegisterBus needs a broker's driver name and an opener")
	}
	if _, dup := busDrivers[driver]; dup {
		panic("handlers: RegisterBus called twice for driver " + driver)
	}
	busDrivers[driver] = open
}

// BusDrivers lists the registered bus drivers, sorted; "gochannel" is always there besides.
func BusDrivers() []string {
	busMu.RLock()
	defer busMu.RUnlock()
	names := make([]string, 0, len(busDrivers))
	for n := range busDrivers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func lookupBus(driver string) (BusOpener, error) {
	busMu.RLock()
	open, ok := busDrivers[driver]
	busMu.RUnlock()
	if ok {
		return open, nil
	}
	if pkg, known := busImports[driver]; known {
		return nil, fmt.Errorf("%w %q: the program does not link it; add import _ %q", ErrUnknownBusDriver, driver, pkg)
	}
	return nil, fmt.Errorf("%w %q: use gochannel, %s or %s", ErrUnknownBusDriver, driver, BusRedisStream, BusNATS)
}

// Subscriptions are the channels of one Subscribe call and how to end them.
type Subscriptions struct {
	chans []<-chan *message.Message
	close func() error
}

// OpenSubscriptions opens n subscriptions with open, for a BusConn's Subscribe; when one
// fails, closeAll ends those already open. closeAll is also how the subscriptions end.
func OpenSubscriptions(n int, closeAll func() error, open func(i int) (<-chan *message.Message, error)) (*Subscriptions, error) {
	subs := &Subscriptions{close: closeAll}
	for i := range n {
		ch, err := open(i)
		if err != nil {
			_ = closeAll()
			return nil, err
		}
		subs.chans = append(subs.chans, ch)
	}
	return subs, nil
}

// LogRecreated logs, for a BusConn's Check, that it created again what a broker restart lost
// (what: the Redis consumer group, the JetStream stream or consumer).
func LogRecreated(log watermill.LoggerAdapter, what string, fields watermill.LogFields) {
	log.Error("the "+what+" was missing (the broker lost its data?): created it again; rows whose notices were lost are found by the sweep",
		nil, fields)
}

// OpenBus connects to the broker, makes sure the stream and the consumer group exist, and
// returns the bus for Config.Bus. Its errors say what failed without the URL (the caller names
// bus.url, redacted); a password of the URL never appears in them.
func OpenBus(ctx context.Context, cfg BusConfig) (*Bus, error) {
	cfg.setDefaults()
	open, err := lookupBus(cfg.Driver)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(cfg.URL) == "" {
		return nil, fmt.Errorf("the %s bus needs the broker's URL", cfg.Driver)
	}
	if broken := configs.BusTopicRule(cfg.Driver, cfg.Topic); broken != "" {
		return nil, fmt.Errorf("topic %s", broken)
	}
	wlog := wmlog.NewLimited(cfg.Logger.WithFields(logrus.Fields{"component": "bus", "bus": cfg.Driver}), busLogEvery)
	drv, err := open(ctx, cfg, wlog)
	if err != nil {
		return nil, scrubSecret(err, cfg.URL)
	}
	return &Bus{cfg: cfg, drv: drv}, nil
}

// Driver is the bus driver's name.
func (b *Bus) Driver() string { return b.cfg.Driver }

// Topic is the stream or subject of the notices.
func (b *Bus) Topic() string { return b.cfg.Topic }

// Redacted is the broker URL without its secrets, for logs.
func (b *Bus) Redacted() string { return configs.RedactBusURL(b.cfg.URL) }

// Close closes the broker connections. The pipeline calls it when it closes.
func (b *Bus) Close() error {
	b.once.Do(func() { b.err = b.drv.Close() })
	return b.err
}

// scrubSecret removes the URL's secrets from an error text, should a client library quote
// them.
func scrubSecret(err error, raw string) error {
	u, perr := url.Parse(raw)
	if perr != nil || u.User == nil {
		return err
	}
	msg := err.Error()
	secrets := []string{u.User.Username()}
	if pw, has := u.User.Password(); has {
		secrets = []string{pw}
	}
	changed := false
	for _, s := range secrets {
		if len(s) >= 3 && strings.Contains(msg, s) {
			msg = strings.ReplaceAll(msg, s, "REDACTED")
			changed = true
		}
	}
	if !changed {
		return err
	}
	return errors.New(msg)
}

// busLogEvery is how often one distinct error of the broker clients is logged as a warning:
// while a broker is down they repeat it every few hundred milliseconds.
const busLogEvery = 30 * time.Second
