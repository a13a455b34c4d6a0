package receiver

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// TestErrorAnswersNeverQuoteThePath: a callback URL spelled in a way no route takes, or any path
// no route takes, is answered without quoting the request (the token it may hold), whatever the
// set-up: Fiber's own not-found and method-not-allowed answers quote it.
func TestErrorAnswersNeverQuoteThePath(t *testing.T) {
	const secret = "odd-spelling-token-7c1e93b05a2d4f68"
	for _, setup := range []setupKind{setupStandalone, setupFiberStreaming, setupNetHTTP} {
		t.Run(string(setup), func(t *testing.T) {
			h := newHarness(t, withSetup(setup))
			h.secrets = append(h.secrets, secret)
			for _, tc := range []struct {
				method, path string
				status       int
				msg          string
			}{
				{"POST", "//v1/callbacks/" + secret, 404, "no such route"},
				{"POST", "/v1/./callbacks/" + secret, 404, "no such route"},
				{"POST", "/v1%2Fcallbacks/" + secret, 404, "no such route"},
				{"POST", "/v1/x/../callbacks/" + secret, 404, "no such route"},
				{"POST", "/v1/callback/" + secret, 404, "no such route"},
				{"GET", "/nowhere/" + secret, 404, "no such route"},
				{"DELETE", "/v1/jobs/" + secret, 405, "Method Not Allowed"},
				{"PATCH", "/v1/callbacks/" + secret, 405, "Method Not Allowed"},
			} {
				t.Run(tc.method+" "+tc.path, func(t *testing.T) {
					req := tc.method + " " + h.path(tc.path) + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"
					a := rawConversation(t, h, "", req, 5*time.Second)
					resps, bodies, _ := responses(t, a)
					if len(resps) != 1 {
						t.Fatalf("%d responses: %q", len(resps), a.bytes)
					}
					if setup == setupNetHTTP && resps[0].StatusCode == http.StatusTemporaryRedirect {
						// The parent's ServeMux cleans //, . and .. itself, before the
						// handler: a redirect to the clean path, to the client that sent it,
						// with no body.
						if len(bodies[0]) != 0 || !strings.Contains(tc.path, "/.") && !strings.HasPrefix(tc.path, "//") {
							t.Errorf("answered %d %q", resps[0].StatusCode, bodies[0])
						}
						return
					}
					want := fmt.Sprintf(`{"error":%q,"status":%d}`, tc.msg, tc.status)
					if resps[0].StatusCode != tc.status || string(bodies[0]) != want {
						t.Errorf("answered %d %s, want %d %s", resps[0].StatusCode, bodies[0], tc.status, want)
					}
					if bytes.Contains(bodies[0], []byte(secret[:12])) {
						t.Errorf("the answer quotes the request: %q", a.bytes)
					}
				})
			}
		})
	}
}

// TestUpperCaseCallbackPath: /V1/CALLBACKS/T is a callback URL to Fiber's routing (it is not
// case-sensitive) and to the header check; it is authenticated as one, and its token never
// reaches an answer or a log line.
func TestUpperCaseCallbackPath(t *testing.T) {
	h := newHarness(t)
	json := map[string]string{"Content-Type": "application/json"}
	r := h.do(http.MethodPost, "/V1/CALLBACKS/"+testRouteToken, errorBody(t, "11111111-0000-4000-8000-0000000000c1"), json)
	if r.status != http.StatusOK {
		t.Fatalf("answered %d %s", r.status, r.body)
	}
	bad := "upper-case-wrong-token-0a1b2c3d4e5f6a7b"
	h.secrets = append(h.secrets, bad)
	r = h.do(http.MethodPost, "/V1/CALLBACKS/"+bad, errorBody(t, "11111111-0000-4000-8000-0000000000c2"), json)
	if r.status != http.StatusUnauthorized || strings.Contains(string(r.body), bad[:12]) {
		t.Errorf("answered %d %s", r.status, r.body)
	}
}

func TestRedactPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/v1/jobs/abc", "/v1/jobs/abc"},
		{"//v1/callbacks/T", "//v1/callbacks/…"},
		{"/v1/./CALLBACKS/T/more", "/v1/./CALLBACKS/…"},
		{"/v1%2Fcallbacks/T", "/v1%2Fcallbacks/…"},
		{"/hooks/v1/Callbacks", "/hooks/v1/Callbacks/…"},
		{"/callback", "/callback"},
	} {
		if got := redactPath(tc.in); got != tc.want {
			t.Errorf("redactPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestReservedCharactersInIDs: a job id with reserved characters (a job of a static route,
// named by another system) is read back through /v1/jobs/{id} with the id percent-encoded, as
// every client writes it, in every set-up; its subtitles and its live messages too.
func TestReservedCharactersInIDs(t *testing.T) {
	for _, setup := range []setupKind{setupStandalone, setupFiberStreaming, setupNetHTTP} {
		t.Run(string(setup), func(t *testing.T) {
			h := newHarness(t, withSetup(setup))
			for _, id := range []string{"partner/job 1", "a?b#c%d", "Zürich+1", "x;y=z"} {
				body := successBody(t, id)
				a := h.ack(h.post(testRouteToken, body, nil))
				err := h.store.Apply(context.Background(), a.ID, func(ctx context.Context, tx store.Tx) error {
					rec := store.JobRecord{
						Job:   api.Job{ID: id, Status: api.StatusDone, Kind: api.KindPreRecorded, CreatedAt: api.NewTime(testNow)},
						Local: store.Local{Source: "callback", ReceivedAt: testNow, UpdatedAt: testNow, Deliveries: 1},
					}
					if err := tx.PutJob(ctx, rec); err != nil {
						return err
					}
					return tx.PutArtifact(ctx, store.Artifact{JobID: id, Name: "subtitles.en.srt", Format: "srt", Language: "en", Path: "/nowhere", CreatedAt: testNow})
				})
				if err != nil {
					t.Fatal(err)
				}
				r := h.read("/v1/jobs/" + url.PathEscape(id))
				if r.status != http.StatusOK || r.json(t)["id"] != id {
					t.Errorf("GET /v1/jobs/%s: %d %s", url.PathEscape(id), r.status, r.body)
				}
				// The artifact is found (its file is not: 500 names the artifact, not 404).
				r = h.read("/v1/jobs/" + url.PathEscape(id) + "/subtitles.vtt")
				if r.status != http.StatusNotFound || !strings.Contains(string(r.body), "it has: srt/en") {
					t.Errorf("subtitles of %q: %d %s", id, r.status, r.body)
				}
			}
			a := rawConversation(t, h, "", "GET "+h.path("/v1/jobs/%zz")+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer "+testReadToken+"\r\n\r\n", 5*time.Second)
			// net/http refuses the request line itself, with its own 400.
			if resps, bodies, _ := responses(t, a); len(resps) != 1 || resps[0].StatusCode != http.StatusBadRequest ||
				setup != setupNetHTTP && string(bodies[0]) != `{"error":"id: invalid percent-encoding in the path","status":400}` {
				t.Errorf("bad escape: %q", a.bytes)
			}
		})
	}
}
