package submitter

import (
	"context"
	"fmt"
	"iter"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/scribehook/scribehook/api"
)

// ListEndpoint names one of the three list endpoints.
type ListEndpoint string

const (
	EndpointPreRecorded   ListEndpoint = pathPreRecorded   // GET /v2/pre-recorded
	EndpointTranscription ListEndpoint = pathTranscription // GET /v2/transcription (deprecated; takes kind)
	EndpointLive          ListEndpoint = pathLive          // GET /v2/live
)

// ListPreRecorded lists pre-recorded jobs (GET /v2/pre-recorded), one page.
func (c *Client) ListPreRecorded(ctx context.Context, q api.ListQuery) (api.Page, error) {
	return c.List(ctx, EndpointPreRecorded, q)
}

// ListTranscriptions lists jobs through the deprecated GET /v2/transcription, the only list
// that filters on kind.
func (c *Client) ListTranscriptions(ctx context.Context, q api.ListQuery) (api.Page, error) {
	return c.List(ctx, EndpointTranscription, q)
}

// ListLive lists live sessions (GET /v2/live), one page.
func (c *Client) ListLive(ctx context.Context, q api.ListQuery) (api.Page, error) {
	return c.List(ctx, EndpointLive, q)
}

// List fetches the first page of a list endpoint with the filters of q. The query is not
// validated here: the service's answer (a 400 with validation_errors) is the one authority.
func (c *Client) List(ctx context.Context, e ListEndpoint, q api.ListQuery) (api.Page, error) {
	switch e {
	case EndpointPreRecorded, EndpointTranscription, EndpointLive:
	default:
		return api.Page{}, fmt.Errorf("unknown list endpoint %q", e)
	}
	var out api.Page
	err := c.do(ctx, call{method: http.MethodGet, path: string(e), query: q.Values(), want: wantOK, out: &out})
	if err != nil {
		return api.Page{}, fmt.Errorf("list %s: %w", e, err)
	}
	return out, nil
}

// NextPage fetches the page at next, the URL a page gave in its next member. The URL must be
// on the service's own scheme and host: the request carries the API key, which must never
// be sent elsewhere because a page said so.
func (c *Client) NextPage(ctx context.Context, next string) (api.Page, error) {
	u, err := c.base.Parse(next)
	if err != nil {
		return api.Page{}, fmt.Errorf("parse next page url: %w", err)
	}
	if !sameOrigin(c.base, u) {
		return api.Page{}, fmt.Errorf("next page url %s is not on the service host %s", u.Redacted(), c.base.Host)
	}
	var out api.Page
	if err := c.do(ctx, call{method: http.MethodGet, target: u, want: wantOK, out: &out}); err != nil {
		return api.Page{}, fmt.Errorf("list next page: %w", err)
	}
	return out, nil
}

// All walks a list from the first page to the last, following each page's next URL until it
// is null. An error is yielded once, as the last element; so is a next URL that points back
// to a page already read, which would otherwise loop for ever.
func (c *Client) All(ctx context.Context, e ListEndpoint, q api.ListQuery) iter.Seq2[api.Job, error] {
	return func(yield func(api.Job, error) bool) {
		page, err := c.List(ctx, e, q)
		if err != nil {
			yield(api.Job{}, err)
			return
		}
		seen := map[string]bool{}
		first := page.Current
		if first == "" {
			first = c.urlFor(call{path: string(e), query: q.Values()}).String()
		}
		seen[c.pageKey(first)] = true
		for {
			for _, job := range page.Items {
				if !yield(job, nil) {
					return
				}
			}
			if page.Next == nil || *page.Next == "" {
				return
			}
			key := c.pageKey(*page.Next)
			if seen[key] {
				yield(api.Job{}, fmt.Errorf("list %s: next page %s repeats an earlier page", e, *page.Next))
				return
			}
			seen[key] = true
			if page, err = c.NextPage(ctx, *page.Next); err != nil {
				yield(api.Job{}, err)
				return
			}
			if page.Current != "" {
				seen[c.pageKey(page.Current)] = true
			}
		}
	}
}

// pageKey normalises a page URL for the loop guard: the same page written with its query
// parameters in another order is the same page.
func (c *Client) pageKey(raw string) string {
	u, err := c.base.Parse(raw)
	if err != nil {
		return raw
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(hostPort(u)) + u.EscapedPath() + "?" + u.Query().Encode()
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(hostPort(a), hostPort(b))
}

// hostPort is the host with the scheme's default port filled in, so that http://h and
// http://h:80 compare equal.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "http", "ws":
			port = "80"
		case "https", "wss":
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}
