package sinks

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/testinfra"
)

var (
	keyOld    = []byte("old signing key, 32 bytes long!!")
	keyNew    = []byte("new signing key, 32 bytes long!!")
	secretOld = "whsec_" + base64.StdEncoding.EncodeToString(keyOld)
	secretNew = "whsec_" + base64.StdEncoding.EncodeToString(keyNew)
)

func testEvent() api.Event {
	return api.Event{
		ID:             "0b9c7f3e-5a61-5c55-9d0e-5a3e1f0c2b11",
		Type:           "live.transcript",
		CreatedAt:      api.NewTime(time.Date(2026, 11, 20, 10, 11, 12, 345e6, time.UTC)),
		JobID:          "45463597-20b7-4af7-b3b3-f5fb778203ab",
		Kind:           api.KindLive,
		Category:       api.CategoryFinalTranscripts,
		CustomMetadata: json.RawMessage(`{"team":"a"}`),
		Data:           json.RawMessage(`{"utterance":{"text":"Tom & Jerry <3"}}`),
	}
}

// received is one request as the test receiver saw it.
type received struct {
	header http.Header
	body   []byte
}

type receiver struct {
	mu   sync.Mutex
	reqs []received
}

func (r *receiver) handler(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, received{req.Header.Clone(), body})
		r.mu.Unlock()
		w.WriteHeader(status)
	}
}

func (r *receiver) last(t *testing.T) received {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) == 0 {
		t.Fatal("no request received")
	}
	return r.reqs[len(r.reqs)-1]
}

// newReceiver serves a test receiver answering status until the test ends, at the URL it gives.
func newReceiver(t *testing.T, status int) (*receiver, string) {
	rc := &receiver{}
	srv := httptest.NewServer(rc.handler(status))
	t.Cleanup(srv.Close)
	return rc, srv.URL
}

// deliver delivers ev through s and gives the request the receiver got.
func (r *receiver) deliver(t *testing.T, s Sink, ev api.Event) received {
	t.Helper()
	if err := s.Deliver(context.Background(), ev); err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	return r.last(t)
}

// newTestWebhook is a webhook sink of spec, closed when the test ends.
func newTestWebhook(t *testing.T, spec Spec, deps Deps) *WebhookSink {
	t.Helper()
	s, err := NewWebhook(spec, deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func loopbackSpec(url string, secrets ...string) Spec {
	return Spec{Name: "hook", Kind: KindWebhook, URL: url, SigningSecrets: secrets, Timeout: 5 * time.Second,
		Allow: []string{"127.0.0.0/8"}}
}

// The receiver verifies with the Standard Webhooks library, knowing one secret of a rotation at
// a time: first only the old one, then only the new one.
func TestWebhookSignatureRotation(t *testing.T) {
	rc, url := newReceiver(t, http.StatusOK)
	var logs bytes.Buffer
	logger := logrus.New()
	logger.SetOutput(&logs)
	logger.SetLevel(logrus.TraceLevel)
	s := newTestWebhook(t, loopbackSpec(url+"/hook", secretOld, secretNew), Deps{Logger: logger})
	ev := testEvent()
	got := rc.deliver(t, s, ev)

	onlyOld, err := standardwebhooks.NewWebhook(secretOld)
	if err != nil {
		t.Fatal(err)
	}
	onlyNew, err := standardwebhooks.NewWebhook(secretNew)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := standardwebhooks.NewWebhookRaw([]byte("a key nobody configured"))
	if err := onlyOld.Verify(got.body, got.header); err != nil {
		t.Errorf("receiver knowing the old secret: %v", err)
	}
	if err := onlyNew.Verify(got.body, got.header); err != nil {
		t.Errorf("receiver knowing the new secret: %v", err)
	}
	if err := other.Verify(got.body, got.header); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Errorf("receiver knowing another secret: %v, want no matching signature", err)
	}

	if id := got.header.Get("webhook-id"); id != ev.ID {
		t.Errorf("webhook-id %q, want the event id %q", id, ev.ID)
	}
	sigs := strings.Split(got.header.Get("webhook-signature"), " ")
	if len(sigs) != 2 || !strings.HasPrefix(sigs[0], "v1,") || !strings.HasPrefix(sigs[1], "v1,") {
		t.Errorf("webhook-signature %q, want two space-separated v1 signatures", got.header.Get("webhook-signature"))
	}
	if ua := got.header.Get("User-Agent"); ua != "scribehook" {
		t.Errorf("User-Agent %q", ua)
	}
	if ct := got.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	want, _ := eventJSON(ev)
	if !bytes.Equal(got.body, want) {
		t.Errorf("body\n%s\nwant\n%s", got.body, want)
	}
	var back api.Event
	if err := json.Unmarshal(got.body, &back); err != nil || back.ID != ev.ID || back.Category != ev.Category ||
		!bytes.Contains(got.body, []byte(`Tom & Jerry <3`)) {
		t.Errorf("envelope does not round-trip unescaped: %s (%v)", got.body, err)
	}

	// A retry of the same event carries the same webhook-id, freshly signed.
	again := rc.deliver(t, s, ev)
	if again.header.Get("webhook-id") != ev.ID {
		t.Error("retry changed webhook-id")
	}
	if err := onlyNew.Verify(again.body, again.header); err != nil {
		t.Errorf("retry: %v", err)
	}

	for _, secret := range []string{secretOld, secretNew, base64.StdEncoding.EncodeToString(keyOld), string(keyNew)} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("logs contain a secret")
		}
	}
}

// A secret without the whsec_ prefix is the key itself; whsec_ without padding decodes too.
func TestWebhookSecretForms(t *testing.T) {
	rc, url := newReceiver(t, http.StatusNoContent)
	unpadded := "whsec_" + base64.RawStdEncoding.EncodeToString([]byte("sixteen byte key!")) // 17 bytes: padding
	s := newTestWebhook(t, loopbackSpec(url, "a raw secret", unpadded), Deps{Logger: logx.Discard()})
	got := rc.deliver(t, s, testEvent())
	raw, _ := standardwebhooks.NewWebhookRaw([]byte("a raw secret"))
	if err := raw.Verify(got.body, got.header); err != nil {
		t.Errorf("raw secret: %v", err)
	}
	padded, _ := standardwebhooks.NewWebhook("whsec_" + base64.StdEncoding.EncodeToString([]byte("sixteen byte key!")))
	if err := padded.Verify(got.body, got.header); err != nil {
		t.Errorf("unpadded whsec_: %v", err)
	}
}

func TestWebhookBadSecrets(t *testing.T) {
	for _, secret := range []string{"", "  ", "whsec_", "whsec_topsecret!!", "whsec_===="} {
		_, err := NewWebhook(loopbackSpec("http://127.0.0.1:1/", secretOld, secret), Deps{Logger: logx.Discard()})
		var se *SpecError
		if !errors.As(err, &se) || se.Field != "SigningSecrets" || !strings.Contains(err.Error(), "[1]") {
			t.Errorf("secret %q: %v, want a SpecError on SigningSecrets[1]", secret, err)
			continue
		}
		if strings.Contains(err.Error(), "topsecret") || strings.Contains(err.Error(), secretOld) {
			t.Errorf("error quotes a secret: %v", err)
		}
	}
}

func TestWebhookUnsigned(t *testing.T) {
	rc, url := newReceiver(t, http.StatusOK)
	var logs bytes.Buffer
	logger := logrus.New()
	logger.SetOutput(&logs)
	s := newTestWebhook(t, loopbackSpec(url), Deps{Logger: logger})
	got := rc.deliver(t, s, testEvent())
	if got.header.Get("webhook-signature") != "" || got.header.Get("webhook-id") == "" || got.header.Get("webhook-timestamp") == "" {
		t.Errorf("headers %v", got.header)
	}
	if !strings.Contains(logs.String(), "no signing secret") {
		t.Errorf("no warning about the missing secret: %q", logs.String())
	}
}

// HTTPS through a base transport that trusts the test certificate; the guard still applies.
func TestWebhookTLS(t *testing.T) {
	var rc receiver
	srv := httptest.NewTLSServer(rc.handler(http.StatusAccepted))
	defer srv.Close()
	base := srv.Client().Transport.(*http.Transport)
	s := newTestWebhook(t, loopbackSpec(srv.URL, secretNew), Deps{Transport: base, Logger: logx.Discard()})
	got := rc.deliver(t, s, testEvent())
	wh, _ := standardwebhooks.NewWebhook(secretNew)
	if err := wh.Verify(got.body, got.header); err != nil {
		t.Error(err)
	}

	guarded, err := NewWebhook(Spec{Name: "hook", Kind: KindWebhook, URL: strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)},
		Deps{Transport: base, Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer guarded.Close()
	err = guarded.Deliver(context.Background(), testEvent())
	var be *BlockedAddressError
	if !errors.As(err, &be) {
		t.Errorf("https to loopback without allow: %v, want refused", err)
	}
}

func TestWebhookStatuses(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	var redirected sync.Mutex
	redirectHits := 0
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirected.Lock()
		redirectHits++
		redirected.Unlock()
	}))
	defer target.Close()

	tests := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		sleep      bool
		wantOK     bool
		disable    bool
		permanent  bool
		retryAfter time.Duration
		wantMsg    string
	}{
		{name: "200", status: 200, wantOK: true},
		{name: "201", status: 201, wantOK: true},
		{name: "204", status: 204, wantOK: true},
		{name: "301 not followed", status: 301, header: map[string]string{"Location": target.URL + "/moved?token=abc"}, wantMsg: "301 Moved Permanently, redirect to"},
		{name: "302 not followed", status: 302, header: map[string]string{"Location": target.URL + "/elsewhere"}, wantMsg: "302 Found"},
		{name: "307 not followed", status: 307, header: map[string]string{"Location": target.URL}, wantMsg: "307"},
		{name: "410 disables", status: 410, body: "endpoint deleted", disable: true, wantMsg: "410 Gone: endpoint deleted"},
		{name: "429 seconds", status: 429, header: map[string]string{"Retry-After": "120"}, retryAfter: 2 * time.Minute, wantMsg: "429"},
		{name: "429 date", status: 429, header: map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, retryAfter: 90 * time.Second},
		{name: "429 date in the past", status: 429, header: map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}},
		{name: "429 garbage", status: 429, header: map[string]string{"Retry-After": "soon"}},
		{name: "503 seconds", status: 503, header: map[string]string{"Retry-After": "7"}, retryAfter: 7 * time.Second},
		{name: "500 retryable", status: 500, body: "  oops\n\tsomething   broke ", wantMsg: "500 Internal Server Error: oops something broke"},
		{name: "400 retryable", status: 400},
		{name: "404 retryable", status: 404},
		{name: "timeout retryable", status: 200, sleep: true, wantMsg: "no answer within 300ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if tt.sleep {
					select {
					case <-r.Context().Done():
					case <-time.After(5 * time.Second):
					}
					return
				}
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			spec := loopbackSpec(srv.URL, secretNew)
			spec.Timeout = 300 * time.Millisecond
			s, err := NewWebhook(spec, Deps{Logger: logx.Discard(), Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			err = s.Deliver(context.Background(), testEvent())
			if tt.wantOK {
				if err != nil {
					t.Fatalf("Deliver = %v, want success", err)
				}
				return
			}
			var f *Failure
			if !errors.As(err, &f) {
				t.Fatalf("Deliver = %v, want a *Failure", err)
			}
			if f.Disable != tt.disable || f.Permanent != tt.permanent || f.RetryAfter != tt.retryAfter {
				t.Errorf("failure %+v (%v), want disable %v permanent %v retry after %s", f, err, tt.disable, tt.permanent, tt.retryAfter)
			}
			if tt.wantMsg != "" && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not say %q", err, tt.wantMsg)
			}
			if strings.Contains(err.Error(), "token=abc") {
				t.Errorf("error quotes the redirect's query: %v", err)
			}
		})
	}
	redirected.Lock()
	defer redirected.Unlock()
	if redirectHits != 0 {
		t.Errorf("a redirect was followed %d times", redirectHits)
	}
}

func TestWebhookNetworkError(t *testing.T) {
	addr := "127.0.0.1:" + testinfra.Port(t) // nothing listens there: connection refused
	s := newTestWebhook(t, loopbackSpec("http://"+addr+"/hook?token=s3cr3t"), Deps{Logger: logx.Discard()})
	err := s.Deliver(context.Background(), testEvent())
	f := AsFailure(err)
	if err == nil || f.Permanent || f.Disable || f.RetryAfter != 0 {
		t.Fatalf("Deliver = %v, want a plain retryable failure", err)
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error quotes the URL's query: %v", err)
	}
	if !strings.Contains(err.Error(), addr) {
		t.Errorf("error %q does not name the host", err)
	}
}

// The caller's context bounds the attempt too.
func TestWebhookCancelled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server notices the client leaving only once the body has been read.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer srv.Close()
	s := newTestWebhook(t, loopbackSpec(srv.URL), Deps{Logger: logx.Discard()})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := s.Deliver(ctx, testEvent()); err == nil {
		t.Fatal("Deliver succeeded")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Deliver took %s after cancellation", d)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := map[string]time.Duration{
		"":                     0,
		"0":                    0,
		"-5":                   0,
		" 30 ":                 30 * time.Second,
		"3600":                 time.Hour,
		"99999999999999999999": 0, // not an int64: not a date either
		"999999999999":         time.Duration(1<<63-1) / time.Second * time.Second,
		now.Add(time.Minute).Format(http.TimeFormat): time.Minute,
		"Fri, 02 Jan 2026 03:05:05 GMT":              time.Minute,
		"Friday, 02-Jan-26 03:05:05 GMT":             time.Minute, // RFC 850
		"Fri Jan  2 03:05:05 2026":                   time.Minute, // asctime
		"Thu, 01 Jan 2026 00:00:00 GMT":              0,
		"tomorrow":                                   0,
	}
	for in, want := range tests {
		if got := retryAfter(in, now); got != want {
			t.Errorf("retryAfter(%q) = %s, want %s", in, got, want)
		}
	}
}
