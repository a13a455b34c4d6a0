package submitter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"

	"github.com/sirupsen/logrus"
)

// Bounds of what one response may weigh: a job record with a full result and its subtitles
// can be large; an error envelope is small, and anything past the bound is just kept short.
const (
	maxResponseBody = 64 << 20
	maxErrorBody    = 1 << 20
)

// call describes one logical call of an endpoint; do turns it into one or more attempts.
type call struct {
	method string
	path   string   // relative to the base URL; ignored when target is set
	target *url.URL // absolute URL, for the next pages of a list
	query  url.Values
	body   any   // encoded as JSON when not nil
	want   []int // accepted status codes
	out    any   // decode target of a successful body; nil ignores it
}

func (cl call) name() string {
	if cl.target != nil {
		return cl.method + " " + cl.target.EscapedPath()
	}
	return cl.method + " " + cl.path
}

// do runs a call with the retry policy. The request body is encoded once and replayed, so
// every attempt sends the same bytes.
func (c *Client) do(ctx context.Context, cl call) error {
	var body []byte
	if cl.body != nil {
		b, err := json.Marshal(cl.body)
		if err != nil {
			return fmt.Errorf("encode request of %s: %w", cl.name(), err)
		}
		body = b
	}
	u := c.urlFor(cl)
	idempotent := cl.method == http.MethodGet || cl.method == http.MethodDelete
	log := c.log.WithFields(logrus.Fields{"method": cl.method, "path": u.Path})

	for attempt := 1; ; attempt++ {
		status, header, err := c.attempt(ctx, cl, u, body)
		if err == nil {
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			if errors.Is(err, cerr) {
				return err
			}
			return fmt.Errorf("%w; last attempt: %w", cerr, err)
		}
		if !shouldRetry(status, err, idempotent) || attempt >= c.retry.MaxAttempts {
			return err
		}
		wait, ok := retryAfter(header, c.now())
		if ok {
			wait = min(wait, c.retry.MaxRetryAfter)
		} else {
			wait = c.jitter(c.retry.backoffCeiling(attempt))
		}
		log.WithFields(logrus.Fields{"attempt": attempt, "status": status, "wait": wait}).
			WithError(err).Warn("service call failed, retrying")
		if serr := c.sleep(ctx, wait); serr != nil {
			return fmt.Errorf("%w; last attempt: %w", serr, err)
		}
	}
}

// shouldRetry classifies the outcome of an attempt: a status the service answered, or a
// transport failure (status 0). A 2xx body that does not decode would come back the same.
func shouldRetry(status int, err error, idempotent bool) bool {
	if status != 0 {
		return retryableStatus(status, idempotent)
	}
	var de *decodeError
	if errors.As(err, &de) {
		return false
	}
	return retryableError(err, idempotent)
}

// attempt sends one request. It returns the status and headers of a response it did not
// accept (status 0 for a transport failure) with the error describing it.
func (c *Client) attempt(ctx context.Context, cl call, u *url.URL, body []byte) (int, http.Header, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u.String(), rd)
	if err != nil {
		return 0, nil, fmt.Errorf("build request of %s: %w", cl.name(), err)
	}
	if c.apiKey != "" {
		req.Header.Set(c.keyHeader, c.apiKey)
	}
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()

	if !slices.Contains(cl.want, resp.StatusCode) {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody)) // lets the connection be reused
		ae := newAPIError(resp.StatusCode, u.EscapedPath(), raw)
		if ae.RequestID == "" {
			// A proxy's or a framework's error page has no envelope, but the id may be in a header.
			ae.RequestID = resp.Header.Get("X-Request-Id")
		}
		return resp.StatusCode, resp.Header, ae
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody+1))
	if err != nil {
		return 0, nil, fmt.Errorf("read response of %s: %w", cl.name(), err)
	}
	if len(raw) > maxResponseBody {
		return 0, nil, fmt.Errorf("response of %s exceeds %d bytes", cl.name(), maxResponseBody)
	}
	c.log.WithFields(logrus.Fields{"method": cl.method, "path": u.Path, "status": resp.StatusCode}).Debug("service call")
	if cl.out == nil {
		return 0, nil, nil
	}
	if err := json.Unmarshal(raw, cl.out); err != nil {
		return 0, nil, &decodeError{endpoint: cl.name(), err: err}
	}
	return 0, nil, nil
}

// decodeError is a 2xx body that does not decode. It is not retried: the same bytes would
// come back.
type decodeError struct {
	endpoint string
	err      error
}

func (e *decodeError) Error() string {
	return "decode response of " + e.endpoint + ": " + e.err.Error()
}
func (e *decodeError) Unwrap() error { return e.err }

// urlFor resolves a call's address. cl.path is in escaped form (ids are escaped by the
// callers), which is what JoinPath expects.
func (c *Client) urlFor(cl call) *url.URL {
	if cl.target != nil {
		return cl.target
	}
	u := c.base.JoinPath(cl.path)
	u.RawQuery = cl.query.Encode()
	return u
}
