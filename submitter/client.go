package submitter

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/traces"
)

// DefaultKeyHeader is the header that carries the account API key. The real service names it
// after itself, so the name is a setting (WithKeyHeader).
const DefaultKeyHeader = "x-service-key"

// modulePath is used to find the version of scribehook for the User-Agent.
const modulePath = "github.com/scribehook/scribehook"

// Client calls the endpoints of the transcription service. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	apiKey    string
	keyHeader string
	userAgent string
	hc        *http.Client
	log       *logrus.Entry
	retry     RetryPolicy
	sleep     func(ctx context.Context, d time.Duration) error
	now       func() time.Time
	jitter    func(limit time.Duration) time.Duration
	// tracer starts the service.get spans (tracing.go); off unless WithTracerProvider.
	tracer traces.Tracer
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client. Its CheckRedirect, when nil, is replaced by one that
// refuses redirects (see New).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithLogger sets the logger; the default discards everything.
func WithLogger(l logrus.FieldLogger) Option { return func(c *Client) { c.log = logx.Entry(l) } }

// WithKeyHeader sets the name of the API key header (default x-service-key).
func WithKeyHeader(name string) Option { return func(c *Client) { c.keyHeader = name } }

// WithUserAgent replaces the User-Agent (default scribehook/<module version>).
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithRetry sets the retry policy; zero fields take the defaults of DefaultRetryPolicy.
func WithRetry(p RetryPolicy) Option { return func(c *Client) { c.retry = p } }

// WithSleeper replaces the wait between attempts and the pacing of StreamLive. It must return
// ctx.Err() when ctx ends first. Tests use it to record the computed delays.
func WithSleeper(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(c *Client) { c.sleep = sleep }
}

// WithClock replaces time.Now, used to read Retry-After dates and to pace StreamLive.
func WithClock(now func() time.Time) Option { return func(c *Client) { c.now = now } }

// WithJitter replaces the random draw of full jitter: it must return a duration in [0, limit].
func WithJitter(jitter func(limit time.Duration) time.Duration) Option {
	return func(c *Client) { c.jitter = jitter }
}

// New returns a client of the service at baseURL (for example http://127.0.0.1:8788) that
// authenticates with apiKey. An empty apiKey sends no key header.
func New(baseURL, apiKey string, opts ...Option) (*Client, error) {
	base, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("parse base url: %w", err)
	}
	if (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("base url %q must be absolute http or https", baseURL)
	}
	if base.Path == "" {
		base.Path = "/" // JoinPath leaves the paths it builds relative otherwise
	}
	c := &Client{
		base:      base,
		apiKey:    apiKey,
		keyHeader: DefaultKeyHeader,
		userAgent: defaultUserAgent(),
		hc:        &http.Client{Timeout: 60 * time.Second},
		sleep:     sleepContext,
		now:       time.Now,
		jitter:    fullJitter,
	}
	for _, opt := range opts {
		opt(c)
	}
	if c.hc == nil {
		c.hc = &http.Client{Timeout: 60 * time.Second}
	}
	if c.keyHeader == "" {
		return nil, errors.New("key header name is empty")
	}
	c.log = logx.OrDiscard(c.log)
	c.retry = c.retry.withDefaults()
	// The key travels in a custom header, which net/http forwards on redirects even to another
	// host; the service never redirects, so a redirect is answered as an unexpected status.
	hc := *c.hc
	if hc.CheckRedirect == nil {
		hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	c.hc = &hc
	return c, nil
}

// BaseURL returns the base address of the service.
func (c *Client) BaseURL() string { return strings.TrimSuffix(c.base.String(), "/") }

func defaultUserAgent() string {
	version := "dev"
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Path == modulePath &&
		info.Main.Version != "" && info.Main.Version != "(devel)" {
		version = info.Main.Version
	}
	return "scribehook/" + version
}

func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func fullJitter(limit time.Duration) time.Duration {
	if limit <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(limit) + 1))
}
