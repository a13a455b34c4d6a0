package receiver

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/scribehook/scribehook/api"
)

// listFrom is GET path on the harness's receiver with a Host header of the client's choosing.
func listFrom(t *testing.T, h *harness, host, path string) api.Page {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Authorization", "Bearer "+testReadToken)
	req.Header.Set("X-Forwarded-Host", host)
	req.Header.Set("X-Forwarded-Proto", "https")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s %v", path, resp.StatusCode, b, err)
	}
	var page api.Page
	if err := json.Unmarshal(b, &page); err != nil {
		t.Fatalf("page: %v: %s", err, b)
	}
	return page
}

// Paging links start from the configured public URL whatever Host the request names: a link
// that a client follows with its bearer token must not lead to a host of the sender's choosing.
func TestListJobsLinksFromPublicURL(t *testing.T) {
	for _, public := range []string{"https://scribe.example.com:8443/base", "https://scribe.example.com:8443/base/"} {
		h := newHarness(t, withConfig(func(c *Config) { c.PublicURL = public }))
		putJobs(t, h)
		page := listFrom(t, h, "evil.example", "/v1/jobs?limit=2&offset=1&kind=pre-recorded")
		const pre = "https://scribe.example.com:8443/base/v1/jobs?"
		if page.First != pre+"kind=pre-recorded&limit=2&offset=0" {
			t.Errorf("public URL %s: first %q", public, page.First)
		}
		if page.Current != pre+"kind=pre-recorded&limit=2&offset=1" {
			t.Errorf("public URL %s: current %q", public, page.Current)
		}
		if page.Next == nil || *page.Next != pre+"kind=pre-recorded&limit=2&offset=3" {
			t.Errorf("public URL %s: next %s", public, deref(page.Next))
		}
	}
}

// Without a public URL the links are path and query only: the client resolves them against
// the address it asked, never against the Host header.
func TestListJobsLinksRelativeWithoutPublicURL(t *testing.T) {
	h := newHarness(t)
	putJobs(t, h)
	page := listFrom(t, h, "evil.example", "/v1/jobs?limit=1")
	if page.First != "/v1/jobs?limit=1&offset=0" || page.Current != "/v1/jobs?limit=1&offset=0" {
		t.Errorf("first %q current %q", page.First, page.Current)
	}
	if page.Next == nil || *page.Next != "/v1/jobs?limit=1&offset=1" {
		t.Errorf("next %s", deref(page.Next))
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
