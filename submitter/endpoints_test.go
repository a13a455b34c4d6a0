package submitter

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/scribehook/scribehook/api"
)

func TestCreateLiveSendsRegionAsQuery(t *testing.T) {
	srv := newRecorder(t, reply(201, `{"id":"s1","created_at":"2026-11-20T10:00:00.000Z","url":"ws://h/v2/live?token=t"}`))
	c, _ := newTestClient(t, srv.URL)
	out, err := c.CreateLive(context.Background(), api.LiveRequest{SampleRate: api.Int(16000)}, "eu-west")
	if err != nil {
		t.Fatalf("create live: %v", err)
	}
	if out.ID != "s1" || out.URL != "ws://h/v2/live?token=t" || out.CreatedAt.IsZero() {
		t.Fatalf("out = %+v", out)
	}
	req, body := srv.request(0)
	if req.Method != http.MethodPost || req.URL.Path != "/v2/live" || req.URL.RawQuery != "region=eu-west" {
		t.Fatalf("request = %s %s", req.Method, req.URL)
	}
	if body != `{"sample_rate":16000}` {
		t.Fatalf("body = %s", body)
	}

	// No region: no query at all.
	srv = newRecorder(t, reply(201, `{"id":"s2","created_at":"2026-11-20T10:00:00.000Z","url":"ws://h"}`))
	c, _ = newTestClient(t, srv.URL)
	if _, err := c.CreateLive(context.Background(), api.LiveRequest{}, ""); err != nil {
		t.Fatalf("create live: %v", err)
	}
	if req, body := srv.request(0); req.URL.RawQuery != "" || body != `{}` {
		t.Fatalf("request = %s, body %s", req.URL, body)
	}
}

func TestKeyHeaderNameIsASetting(t *testing.T) {
	srv := newRecorder(t, reply(202, ``))
	c, _ := newTestClient(t, srv.URL, WithKeyHeader("x-gladia-key"), WithUserAgent("scribehook/v1.2.3"))
	if err := c.DeleteLive(context.Background(), "s1"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	req, _ := srv.request(0)
	if got := req.Header.Get("x-gladia-key"); got != testKey {
		t.Fatalf("x-gladia-key = %q", got)
	}
	if _, ok := req.Header["X-Service-Key"]; ok {
		t.Fatal("default header sent as well")
	}
	if req.Method != http.MethodDelete || req.URL.Path != "/v2/live/s1" || req.Header.Get("User-Agent") != "scribehook/v1.2.3" {
		t.Fatalf("request = %s %s UA %q", req.Method, req.URL.Path, req.Header.Get("User-Agent"))
	}
}

func TestEmptyKeySendsNoHeader(t *testing.T) {
	srv := newRecorder(t, reply(204, ``))
	c, err := New(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DeletePreRecorded(context.Background(), "j1"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if req, _ := srv.request(0); len(req.Header.Values(DefaultKeyHeader)) != 0 {
		t.Fatalf("key header sent: %v", req.Header)
	}
}

func TestDeleteAcceptsTheDocumentedCodes(t *testing.T) {
	for _, status := range []int{200, 202, 204} {
		srv := newRecorder(t, reply(status, ``))
		c, _ := newTestClient(t, srv.URL)
		if err := c.DeletePreRecorded(context.Background(), "j1"); err != nil {
			t.Errorf("status %d: %v", status, err)
		}
	}
}

func TestBaseURLPathAndIDEscaping(t *testing.T) {
	srv := newRecorder(t, reply(200, jobJSON))
	c, _ := newTestClient(t, srv.URL+"/proxy/")
	if _, err := c.GetPreRecorded(context.Background(), "a/b?c"); err != nil {
		t.Fatalf("get: %v", err)
	}
	req, _ := srv.request(0)
	if req.URL.EscapedPath() != "/proxy/v2/pre-recorded/a%2Fb%3Fc" || req.URL.RawQuery != "" {
		t.Fatalf("path = %s query %q", req.URL.EscapedPath(), req.URL.RawQuery)
	}
	for _, id := range []string{"", ".", ".."} {
		if _, err := c.GetPreRecorded(context.Background(), id); err == nil {
			t.Errorf("id %q accepted", id)
		}
	}
	if srv.count() != 1 {
		t.Fatalf("bad ids reached the server")
	}
}

func TestNewRejectsBadSettings(t *testing.T) {
	for _, base := range []string{"", "127.0.0.1:8788", "ftp://h", "http://"} {
		if _, err := New(base, "k"); err == nil {
			t.Errorf("base %q accepted", base)
		}
	}
	if _, err := New("http://h", "k", WithKeyHeader("")); err == nil {
		t.Error("empty key header accepted")
	}
}

func TestRequestBodyKeepsUnknownFields(t *testing.T) {
	srv := newRecorder(t, reply(201, `{"id":"x","result_url":"u"}`))
	c, _ := newTestClient(t, srv.URL)
	var req api.PreRecordedRequest
	if err := json.Unmarshal([]byte(`{"audio_url":"http://a/b.wav","future_flag":true}`), &req); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreatePreRecorded(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if _, body := srv.request(0); body != `{"audio_url":"http://a/b.wav","future_flag":true}` {
		t.Fatalf("body = %s", body)
	}
}
