package sinks

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.opentelemetry.io/otel/propagation"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/httpretry"
	"github.com/scribehook/scribehook/internal/netguard"
	"github.com/scribehook/scribehook/internal/whsec"
	"github.com/scribehook/scribehook/sinks/sinkexpr"
)

// DefaultWebhookTimeout bounds one webhook attempt when the spec gives none.
const DefaultWebhookTimeout = 10 * time.Second

// UserAgent is what webhook requests say they come from.
const UserAgent = "scribehook"

const (
	// maxErrorBody is how much of a refusal's body an error quotes.
	maxErrorBody = 256
	// maxDrain is how much of a response is read so that its connection can be reused; a
	// longer body costs a new connection, not memory.
	maxDrain = 64 << 10
)

// WebhookSink POSTs each event, signed the Standard Webhooks way.
type WebhookSink struct {
	name    string
	url     *url.URL
	guard   *Guard
	dialer  *netguard.Dialer
	client  *http.Client
	keys    [][]byte // the signing secrets' HMAC keys
	timeout time.Duration
	now     func() time.Time
	log     logrus.FieldLogger
	// body and headers are the spec's projection and added headers (nil: the envelope, none).
	body    *sinkexpr.Program
	headers map[string]*sinkexpr.Program
}

// NewWebhook builds a webhook sink from spec (kind webhook).
func NewWebhook(spec Spec, deps Deps) (*WebhookSink, error) {
	deps = deps.WithDefaults()
	if spec.URL == "" {
		return nil, required(spec, "URL", KindWebhook, "")
	}
	u, err := url.Parse(spec.URL)
	if err != nil {
		// url.Parse quotes the URL, which may carry a token; say what is wrong without it.
		return nil, specErr(spec, "URL", fmt.Errorf("not a URL: %w", netguard.StripURLError(err)))
	}
	if u.Host == "" || !u.IsAbs() {
		return nil, specErr(spec, "URL", errors.New("must be an absolute http or https URL"))
	}
	guard, err := NewGuard(spec.Allow)
	if err != nil {
		return nil, specErr(spec, "Allow", err)
	}
	if err := guard.CheckURL(u); err != nil {
		return nil, specErr(spec, "URL", err)
	}
	keys, err := parseSecrets(spec.SigningSecrets)
	if err != nil {
		return nil, specErr(spec, "SigningSecrets", err)
	}
	timeout := spec.Timeout
	if timeout < 0 {
		return nil, specErr(spec, "Timeout", fmt.Errorf("must not be negative (got %s)", timeout))
	}
	if timeout == 0 {
		timeout = DefaultWebhookTimeout
	}

	d := netguard.NewDialer(guard, deps.Resolver)
	tr := d.Transport(deps.Transport)
	// Every attempt in flight holds a connection to the one host; keeping as many idle ones
	// (Go's default keeps 2) saves a TCP and TLS handshake per event under load.
	tr.MaxIdleConnsPerHost = max(tr.MaxIdleConnsPerHost, spec.Concurrency, DefaultConcurrency)
	tr.MaxIdleConns = max(tr.MaxIdleConns, tr.MaxIdleConnsPerHost)
	client := &http.Client{
		// Webhooks go direct: the transport drops any proxy, which the guard would check
		// instead of the target.
		Transport: tr,
		// A redirect would lead to a place the URL check never saw; 3xx is reported as a
		// failure instead.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	log := deps.Logger.WithField("sink", spec.Name)
	if len(keys) == 0 {
		log.Warn("webhook sink has no signing secret: receivers cannot verify its deliveries")
	}
	return &WebhookSink{
		name: spec.Name, url: u, guard: guard, dialer: d, client: client, keys: keys,
		timeout: timeout, now: deps.Now, log: log, body: spec.Body, headers: spec.Headers,
	}, nil
}

// parseSecrets turns configured secrets into HMAC keys, their surrounding spaces trimmed, as
// whsec.Key reads them: "whsec_<base64>" is decoded (with or without padding), any other
// string is the key itself. Messages never quote a secret.
func parseSecrets(secrets []string) ([][]byte, error) {
	var out [][]byte
	for i, s := range secrets {
		key, err := whsec.Key(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out = append(out, key)
	}
	return out, nil
}

// signature is the webhook-signature header: a v1 entry per key, space-separated, each
// computed over the body where it lies.
func (s *WebhookSink) signature(id, ts string, body eventBody) string {
	var b strings.Builder
	for i, key := range s.keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("v1,")
		b.WriteString(base64.StdEncoding.EncodeToString(whsec.SignParts(key, id, ts, body...)))
	}
	return b.String()
}

// Name implements Sink.
func (s *WebhookSink) Name() string { return s.name }

// Close implements Sink: idle connections are closed.
func (s *WebhookSink) Close() error {
	s.client.CloseIdleConnections()
	return nil
}

// Deliver POSTs ev. A 2xx is success; 410 disables the sink; a refused address is permanent;
// everything else (3xx, other statuses, network errors, timeouts) is retried, after the
// Retry-After the destination asked for when it did.
func (s *WebhookSink) Deliver(ctx context.Context, ev api.Event) error {
	if err := s.guard.CheckURL(s.url); err != nil {
		return &Failure{Err: err, Permanent: true}
	}
	body, extra, err := s.project(ctx, ev)
	if err != nil {
		return err
	}
	if ev.ID == "" {
		return &Failure{Err: errors.New("event has no id to send as webhook-id"), Permanent: true}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	// The body is read from the event's pieces (its data where it lies), not from a copy.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url.String(), body.Reader())
	if err != nil {
		return &Failure{Err: fmt.Errorf("build request: %w", err), Permanent: true}
	}
	req.ContentLength = int64(body.Len())
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(body.Reader()), nil }
	ts := strconv.FormatInt(s.now().Unix(), 10)
	// The configured headers first: the sink's own, set after, always win (and New refuses
	// their names anyway).
	for name, value := range extra {
		req.Header.Set(name, value)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(standardwebhooks.HeaderWebhookID, ev.ID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, ts)
	if len(s.keys) > 0 {
		req.Header.Set(standardwebhooks.HeaderWebhookSignature, s.signature(ev.ID, ts, body))
	}
	// The attempt's sink.deliver span, when the dispatcher traces (none otherwise: nothing is
	// set), so that the target's own spans join the trace. The signature covers the id, the
	// timestamp and the body, not these headers.
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))

	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return s.transportFailure(ctx, err)
	}
	defer resp.Body.Close()
	recordStatus(ctx, resp.StatusCode)
	snippet := readSnippet(resp.Body)
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if debugEnabled(s.log) {
			s.log.WithFields(logrus.Fields{"job_id": ev.JobID, "event_id": ev.ID, "status": resp.StatusCode,
				"duration": time.Since(start)}).Debug("webhook delivered")
		}
		return nil
	}
	return s.statusFailure(resp, snippet)
}

// project is the body to send, the envelope or the spec's Body's value, and the values of the
// spec's Headers. An expression that fails over this event (a field it lacks) fails the
// delivery for good: retrying would evaluate it over the same event again.
func (s *WebhookSink) project(ctx context.Context, ev api.Event) (eventBody, map[string]string, error) {
	if s.body == nil && len(s.headers) == 0 {
		body, err := bodyOf(ev)
		if err != nil {
			return nil, nil, &Failure{Err: fmt.Errorf("encode event: %w", err), Permanent: true}
		}
		return body, nil, nil
	}
	x := sinkexpr.NewEvent(exprInput(&ev))
	var body eventBody
	if s.body != nil {
		b, err := s.body.JSON(ctx, x)
		if err != nil {
			return nil, nil, &Failure{Err: fmt.Errorf("body: %w", err), Permanent: true}
		}
		body = eventBody{b}
	} else {
		b, err := bodyOf(ev)
		if err != nil {
			return nil, nil, &Failure{Err: fmt.Errorf("encode event: %w", err), Permanent: true}
		}
		body = b
	}
	extra := make(map[string]string, len(s.headers))
	for name, p := range s.headers {
		if p == nil {
			continue
		}
		v, err := p.Text(ctx, x)
		if err != nil {
			return nil, nil, &Failure{Err: fmt.Errorf("headers[%s]: %w", name, err), Permanent: true}
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, nil, &Failure{Err: fmt.Errorf("headers[%s]: the value holds a line break or NUL", name), Permanent: true}
		}
		extra[name] = v
	}
	return body, extra, nil
}

// transportFailure classifies an error of the request itself. url.Error quotes the whole URL,
// query tokens included; errors name the host only.
func (s *WebhookSink) transportFailure(ctx context.Context, err error) error {
	err = netguard.StripURLError(err)
	var blocked *BlockedAddressError
	if errors.As(err, &blocked) {
		// The configuration points at a refused place: retrying changes nothing until someone
		// changes allow or the DNS, and then the dead letter can be replayed.
		return &Failure{Err: fmt.Errorf("post to %s: %w", s.url.Host, err), Permanent: true}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &Failure{Err: fmt.Errorf("post to %s: no answer within %s", s.url.Host, s.timeout)}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &Failure{Err: fmt.Errorf("post to %s: timed out: %w", s.url.Host, err)}
	}
	return &Failure{Err: fmt.Errorf("post to %s: %w", s.url.Host, err)}
}

func (s *WebhookSink) statusFailure(resp *http.Response, snippet string) error {
	status := resp.Status
	if status == "" {
		status = strconv.Itoa(resp.StatusCode)
	}
	msg := fmt.Sprintf("%s answered %s", s.url.Host, status)
	if snippet != "" {
		msg += ": " + snippet
	}
	switch {
	case resp.StatusCode == http.StatusGone:
		return &Failure{Err: errors.New(msg), Disable: true}
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		if loc := resp.Header.Get("Location"); loc != "" {
			msg = fmt.Sprintf("%s answered %s, redirect to %s not followed", s.url.Host, status, netguard.RedactURL(loc))
		}
		return &Failure{Err: errors.New(msg)}
	}
	return &Failure{Err: errors.New(msg), RetryAfter: retryAfter(resp.Header.Get("Retry-After"), s.now())}
}

// debugEnabled reports whether l writes debug lines, so that a hot path builds its fields only
// then; a logger that cannot say is assumed to.
func debugEnabled(l logrus.FieldLogger) bool {
	switch l := l.(type) {
	case *logrus.Entry:
		return l.Logger.IsLevelEnabled(logrus.DebugLevel)
	case *logrus.Logger:
		return l.IsLevelEnabled(logrus.DebugLevel)
	}
	return true
}

// retryAfter is the wait a Retry-After value asks for, unbounded (the policy bounds it); 0 when
// absent, invalid or past.
func retryAfter(v string, now time.Time) time.Duration {
	d, _ := httpretry.After(v, now, math.MaxInt64)
	return d
}

// readSnippet drains the body for connection reuse and keeps its start, on one line, for the
// error message.
func readSnippet(r io.Reader) string {
	buf := make([]byte, maxErrorBody)
	n, _ := io.ReadFull(r, buf)
	_, _ = io.Copy(io.Discard, io.LimitReader(r, maxDrain))
	s := strings.ToValidUTF8(string(buf[:n]), "?")
	s = strings.Join(strings.Fields(s), " ")
	if n == maxErrorBody {
		s += "…"
	}
	return s
}
