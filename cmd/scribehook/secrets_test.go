package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/submitter"
)

// TestNoSecretInTheLogs runs a whole loop — serve with a signed route, the service API key, a
// read token, per-job tokens and a signed webhook sink; the sandbox; a submitted job, a live
// session, a signed webhook, a forged one, a revoked token, a callback to a serve that is
// down, read API calls with the right and a wrong token — with every component logging at
// debug level into one buffer, and greps the logs for each secret.
func TestNoSecretInTheLogs(t *testing.T) {
	logs := &sandboxtest.Buffer{}
	base := logrus.New()
	base.SetOutput(logs)
	base.SetLevel(logrus.DebugLevel)
	base.SetFormatter(&logrus.TextFormatter{DisableColors: true, DisableTimestamp: true})
	log := logrus.NewEntry(base)

	secret := func(prefix string, n int) string {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return prefix + hex.EncodeToString(b)
	}
	whsec := func() string {
		b := make([]byte, 24)
		_, _ = rand.Read(b)
		return "whsec_" + base64.StdEncoding.EncodeToString(b)
	}
	apiKey, readToken, routeToken := secret("key-", 16), secret("read-", 16), secret("route-", 16)
	routeSecret, sinkSecret := whsec(), whsec()
	secrets := map[string]string{
		"API key": apiKey, "read token": readToken, "route token": routeToken,
		"route signing secret": routeSecret, "route signing key": strings.TrimPrefix(routeSecret, "whsec_"),
		"sink signing secret": sinkSecret, "sink signing key": strings.TrimPrefix(sinkSecret, "whsec_"),
	}

	target := newSignedHook(t, sinkSecret)
	target.setDown(true) // the first attempts fail: retries are logged too
	l := newLoggedLoop(t, log, apiKey, func(o *serverOptions) {
		o.Logger = log
		o.ReadToken = readToken
		o.Routes = []receiver.Route{{Name: "account", Token: routeToken, SigningSecrets: []string{routeSecret}}}
		spec := sinks.Spec{
			Name: "hook", Kind: "webhook", URL: target.URL, SigningSecrets: []string{sinkSecret},
			Allow: []string{"127.0.0.0/8"}, Filter: sinks.Filter{Events: []string{"*"}},
			Retry: []time.Duration{0, 50 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, time.Second}, BreakerThreshold: 1000,
		}
		o.Sinks = []sinkSetup{newSink(t, spec, log.WithField("sink", "hook"))}
	})
	ctx := context.Background()
	mint := func(kind api.JobKind) string {
		u := l.callbackURL(kind)
		secrets["job token "+strconv.Itoa(len(secrets))] = u[strings.LastIndex(u, "/")+1:]
		return u
	}

	// A submitted job, called back on its own token.
	created, err := l.service.CreatePreRecorded(ctx, api.PreRecordedRequest{
		AudioURL: l.files.URL + "/sample.wav", Callback: api.Bool(true), Subtitles: api.Bool(true),
		CallbackConfig: &api.CallbackConfig{URL: mint(api.KindPreRecorded), Method: "PUT"},
	})
	if err != nil {
		t.Fatal(err)
	}
	l.waitJob(created.ID)

	// A live session: its socket URL holds a session token.
	live, err := l.service.CreateLive(ctx, api.LiveRequest{
		SampleRate: api.Int(8000), Endpointing: api.Float(0.3), Callback: api.Bool(true),
		CallbackConfig: &api.LiveCallbackConfig{URL: mint(api.KindLive), MessagesConfig: api.EveryMessage(true)},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	wsURL, err := url.Parse(live.URL)
	if err != nil || wsURL.Query().Get("token") == "" {
		t.Fatalf("live url %q: %v", live.URL, err)
	}
	secrets["live session token"] = wsURL.Query().Get("token")
	if err := l.service.StreamLive(ctx, live.URL, bytes.NewReader(l.wav), submitter.StreamOptions{SampleRate: 8000}, nil); err != nil {
		t.Fatal(err)
	}
	l.storedMessages(live.ID, api.MessageEndSession)

	// A job whose callbacks find serve down: the service's failed attempts are logged.
	deadAddr := "127.0.0.1:" + freePort(t)
	downURL := mint(api.KindPreRecorded)
	downURL = "http://" + deadAddr + downURL[strings.Index(downURL, "/v1/"):]
	if _, err := l.service.CreatePreRecorded(ctx, api.PreRecordedRequest{
		AudioURL: l.files.URL + "/sample.wav", Callback: api.Bool(true), CallbackConfig: &api.CallbackConfig{URL: downURL},
	}); err != nil {
		t.Fatal(err)
	}

	// A signed webhook, the same forged, a revoked per-job token.
	body := []byte(`{"event":"transcription.success","payload":{"id":"` + created.ID + `"}}`)
	if code, resp := l.post("/v1/callbacks/"+routeToken, signAt(routeSecret, "msg_secret", time.Now(), body), body); code != 200 {
		t.Fatalf("signed webhook = %d %s", code, resp)
	}
	forged := signAt(whsec(), "msg_forged", time.Now(), body)
	if code, resp := l.post("/v1/callbacks/"+routeToken, forged, body); code != 401 {
		t.Fatalf("forged webhook = %d %s", code, resp)
	}
	revoked := mint(api.KindPreRecorded)
	tok := revoked[strings.LastIndex(revoked, "/")+1:]
	if err := l.store.RevokeToken(ctx, store.HashToken(tok)); err != nil {
		t.Fatal(err)
	}
	if code, resp := l.post("/v1/callbacks/"+tok, nil, []byte(`{"id":"x","event":"transcription.error","error":{"code":1,"message":"m"}}`)); code != 401 {
		t.Fatalf("revoked token = %d %s", code, resp)
	}

	// The read API, with a wrong token and with the right one.
	for _, tc := range []struct {
		token string
		want  int
	}{{"wrong-" + readToken[:8], 401}, {readToken, 200}} {
		code, _ := httpDo(t, http.MethodGet, "http://"+l.addr+"/v1/jobs/"+created.ID, http.Header{"Authorization": {"Bearer " + tc.token}}, nil)
		if code != tc.want {
			t.Fatalf("read API = %d, want %d", code, tc.want)
		}
	}

	// The sink's target comes back: the signed deliveries arrive and verify.
	time.Sleep(300 * time.Millisecond)
	target.setDown(false)
	testwait.For(t, "signed sink deliveries", 45*time.Second, func() bool {
		return target.distinct() >= 2
	})
	testwait.For(t, "the service to give up on the callback to the stopped serve", 30*time.Second, func() bool {
		return strings.Contains(logs.String(), "callback given up after the last attempt")
	})
	if _, _, bad := target.result(); bad != 0 {
		t.Errorf("%d sink deliveries failed verification", bad)
	}
	l.stop()

	out := logs.String()
	// The logs are those of a full debug run: every component spoke.
	for _, want := range []string{
		"component=receiver", "component=handlers", "component=sandbox", "sink=hook",
		"callback rejected", "delivery applied", "callback attempt failed", "service call", "live session connected",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the logs lack %q: the test no longer sees every component", want)
		}
	}
	for name, s := range secrets {
		for _, form := range []string{s, url.PathEscape(s), url.QueryEscape(s)} {
			if i := strings.Index(out, form); i >= 0 {
				line := out[strings.LastIndex(out[:i], "\n")+1:]
				if j := strings.IndexByte(line, '\n'); j >= 0 {
					line = line[:j]
				}
				t.Errorf("the %s appears in the logs:\n%s", name, line)
				break
			}
		}
	}
	t.Logf("%d log lines, %d secrets checked", strings.Count(out, "\n"), len(secrets))
}

// newLoggedLoop is newLoopWith with the sandbox and the service client logging to log, and
// apiKey as the account's key.
func newLoggedLoop(t *testing.T, log *logrus.Entry, apiKey string, with func(*serverOptions)) *loop {
	t.Helper()
	return startLoop(t, sandbox.Config{
		APIKey: apiKey, Logger: log,
		Callbacks: sandbox.CallbackPolicy{Schedule: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}},
	}, with)
}
