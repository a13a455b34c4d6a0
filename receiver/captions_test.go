package receiver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/captions/signedurl"
	"github.com/scribehook/scribehook/store"
)

// sessionStart is when the test sessions' recording starts: a minute before testNow, so
// that ten 6-second segments are past while the session runs.
var sessionStart = testNow.Add(-time.Minute)

// putLiveRecord stores the record of a live session, ended at ended unless that is zero.
func putLiveRecord(t *testing.T, h *harness, id string, ended time.Time) {
	t.Helper()
	j := api.Job{ID: id, Kind: api.KindLive, Version: api.RecordVersion, Status: api.StatusProcessing,
		CreatedAt: api.NewTime(sessionStart.Add(-30 * time.Second))}
	if !ended.IsZero() {
		j.Status, j.CompletedAt = api.StatusDone, api.PtrTime(ended)
	}
	if err := h.store.PutJob(context.Background(), store.JobRecord{Job: j}); err != nil {
		t.Fatal(err)
	}
}

func final(id string, start, end float64, text string) map[string]any {
	return map[string]any{"type": "transcript", "data": map[string]any{
		"id": id, "is_final": true,
		"utterance": map[string]any{"start": start, "end": end, "confidence": 0.9, "channel": 0, "words": []any{}, "text": text},
	}}
}

// storeSession stores a session's start, a partial and three finals: one in segment 0, one
// across segments 0 and 1, one in segment 2.
func storeSession(t *testing.T, h *harness, id string) {
	t.Helper()
	storeLive(t, h, id,
		map[string]any{"type": "start_session", "created_at": sessionStart.Add(-time.Second).Format(time.RFC3339Nano)},
		map[string]any{"type": "start_recording", "created_at": sessionStart.Format(time.RFC3339Nano)},
		transcript("u1", false, "hel"),
		final("u1", 1, 2.5, "Hello world."),
		final("u2", 5, 8, "This one crosses the boundary."),
		final("u3", 13, 13.5, "Third & last"),
	)
}

// playlistText is the playlist of segments 0 to n-1, all whole but for the last one lasting
// last (when not zero), each URI followed by query.
func playlistText(n int, last string, query string, ended bool) string {
	var b strings.Builder
	b.WriteString("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:EVENT\n")
	for i := range n {
		d := "6.000"
		if i == n-1 && last != "" {
			d = last
		}
		fmt.Fprintf(&b, "#EXT-X-PROGRAM-DATE-TIME:%s\n#EXTINF:%s,\ncaptions/%d.vtt%s\n",
			sessionStart.Add(time.Duration(i)*6*time.Second).UTC().Format("2006-01-02T15:04:05.000Z"), d, i, query)
	}
	if ended {
		b.WriteString("#EXT-X-ENDLIST\n")
	}
	return b.String()
}

func TestCaptionsPlaylist(t *testing.T) {
	h := newHarness(t)
	putLiveRecord(t, h, sessionID, time.Time{})
	storeSession(t, h, sessionID)

	res := h.read("/v1/live/" + sessionID + "/captions.m3u8")
	if res.status != 200 || res.header.Get("Content-Type") != "application/vnd.apple.mpegurl" {
		t.Fatalf("playlist: %d %q %s", res.status, res.header.Get("Content-Type"), res.body)
	}
	running := playlistText(10, "", "", false)
	if string(res.body) != running {
		t.Errorf("running playlist:\n%s\nwant:\n%s", res.body, running)
	}
	wantSeg := []string{
		"WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\n\n1\n00:00:01.000 --> 00:00:02.500\nHello world.\n\n" +
			"2\n00:00:05.000 --> 00:00:06.000\nThis one crosses the boundary.\n\n",
		"WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\n\n1\n00:00:06.000 --> 00:00:08.000\nThis one crosses the boundary.\n\n",
		"WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\n\n1\n00:00:13.000 --> 00:00:13.834\nThird &amp; last\n\n",
		"WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\n\n",
	}
	for n, want := range wantSeg {
		res := h.read(fmt.Sprintf("/v1/live/%s/captions/%d.vtt", sessionID, n))
		if res.status != 200 || string(res.body) != want || res.header.Get("Content-Type") != "text/vtt; charset=utf-8" {
			t.Errorf("segment %d: %d %q\n%s\nwant:\n%s", n, res.status, res.header.Get("Content-Type"), res.body, want)
		}
	}

	// A final stored later is in the next read; the end of the session ends the playlist
	// with every segment the running one listed.
	storeLive(t, h, sessionID, final("u4", 20, 21, "Late one."),
		map[string]any{"type": "end_recording", "data": map[string]any{"recording_duration": 22}},
		map[string]any{"type": "end_session"})
	putLiveRecord(t, h, sessionID, testNow)
	if res := h.read("/v1/live/" + sessionID + "/captions.m3u8"); string(res.body) != running+"#EXT-X-ENDLIST\n" {
		t.Errorf("ended playlist:\n%s", res.body)
	}
	if res := h.read("/v1/live/" + sessionID + "/captions/3.vtt"); !strings.Contains(string(res.body), "00:00:20.000 --> 00:00:21.000\nLate one.") {
		t.Errorf("segment 3 after a later final: %s", res.body)
	}
}

// TestCaptionsPlaylistEndedEarly: a session that ended before the clock ran past its
// recording lists its segments up to the recording's end, the last one short.
func TestCaptionsPlaylistEndedEarly(t *testing.T) {
	h := newHarness(t)
	putLiveRecord(t, h, sessionID, sessionStart.Add(15*time.Second))
	storeSession(t, h, sessionID)
	storeLive(t, h, sessionID, map[string]any{"type": "end_recording", "data": map[string]any{"recording_duration": 14}})
	res := h.read("/v1/live/" + sessionID + "/captions.m3u8")
	if want := playlistText(3, "2.000", "", true); string(res.body) != want {
		t.Errorf("playlist:\n%s\nwant:\n%s", res.body, want)
	}
}

func TestCaptionsNotFound(t *testing.T) {
	h := newHarness(t)
	putLiveRecord(t, h, sessionID, time.Time{})
	if err := h.store.PutJob(context.Background(), store.JobRecord{Job: api.Job{ID: "job-1", Kind: api.KindPreRecorded,
		Status: api.StatusDone, Version: api.RecordVersion, CreatedAt: api.NewTime(testNow)}}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/v1/live/nope/captions.m3u8":  "no such live session",
		"/v1/live/job-1/captions.m3u8": "no such live session",
		// Created 90 s before testNow, with no start message: 15 segments are past.
		"/v1/live/" + sessionID + "/captions/15.vtt":   "no such segment",
		"/v1/live/" + sessionID + "/captions/01.vtt":   "N.vtt",
		"/v1/live/" + sessionID + "/captions/x.m3u8":   "N.vtt",
		"/v1/live/" + sessionID + "/captions/-1.vtt":   "N.vtt",
		"/v1/live/nope/captions/0.vtt":                 "no such live session",
		"/v1/live/" + sessionID + "/captions/9999.vtt": "no such segment",
	} {
		res := h.read(path)
		if res.status != http.StatusNotFound || !strings.Contains(res.json(t)["error"].(string), want) {
			t.Errorf("%s: %d %s, want 404 %q", path, res.status, res.body, want)
		}
	}
	if res := h.do(http.MethodPost, "/v1/live/nope/captions/url", nil, map[string]string{"Authorization": "Bearer " + testReadToken}); res.status != 404 {
		t.Errorf("URL of an unknown session: %d %s", res.status, res.body)
	}
}

// captionsURL asks the receiver for a signed URL of session id.
func captionsURL(t *testing.T, h *harness, id, ttl string) (CaptionsURL, response) {
	t.Helper()
	res := h.do(http.MethodPost, "/v1/live/"+url.PathEscape(id)+"/captions/url?ttl="+ttl, nil,
		map[string]string{"Authorization": "Bearer " + testReadToken})
	var a CaptionsURL
	if res.status == 200 {
		if err := json.Unmarshal(res.body, &a); err != nil {
			t.Fatal(err)
		}
	}
	return a, res
}

func TestCaptionsSignedURL(t *testing.T) {
	h := newHarness(t, withConfig(func(c *Config) { c.PublicURL = "https://captions.example.com/base/" }))
	putLiveRecord(t, h, sessionID, time.Time{})
	putLiveRecord(t, h, "other-session", time.Time{})
	storeSession(t, h, sessionID)

	a, res := captionsURL(t, h, sessionID, "2h")
	if res.status != 200 {
		t.Fatalf("sign: %d %s", res.status, res.body)
	}
	signer := signedurl.New(signedurl.DeriveKey(testReadToken))
	exp := testNow.Add(2 * time.Hour)
	q := "?" + signer.Query(sessionID, exp)
	h.secrets = append(h.secrets, signer.Sign(sessionID, exp))
	base := "https://captions.example.com/base/v1/live/" + sessionID
	if a.URL != base+"/captions.m3u8"+q || a.PageURL != base+"/captions.html"+q || a.ExpiresAt != "2026-11-20T14:00:00Z" {
		t.Errorf("answer %+v, want %s%s", a, base, q)
	}
	if strings.Contains(string(res.body), testReadToken) {
		t.Error("the answer holds the read token")
	}

	// The URL opens the playlist, whose segments carry the same signature, without a bearer.
	noAuth := map[string]string{}
	path := "/v1/live/" + sessionID
	res = h.do(http.MethodGet, path+"/captions.m3u8"+q, nil, noAuth)
	if want := playlistText(10, "", q, false); res.status != 200 || string(res.body) != want {
		t.Errorf("signed playlist: %d\n%s\nwant:\n%s", res.status, res.body, want)
	}
	if res.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("no CORS header on a signed answer: %v", res.header)
	}
	if res := h.do(http.MethodGet, path+"/captions/0.vtt"+q, nil, noAuth); res.status != 200 || !strings.Contains(string(res.body), "Hello world.") {
		t.Errorf("signed segment: %d %s", res.status, res.body)
	}

	expired := "?" + signer.Query(sessionID, testNow)
	otherSession := "?" + signer.Query("other-session", exp)
	tampered := strings.Replace(q, "sig=", "sig=A", 1)
	tampered = tampered[:len(tampered)-1]
	if tampered == q {
		t.Fatal("tampering changed nothing")
	}
	longer := "?" + signedurl.ParamExpiry + "=" + fmt.Sprint(exp.Unix()+3600) + "&sig=" + signer.Sign(sessionID, exp)
	cases := []struct {
		name, path string
		header     map[string]string
		status     int
		want       string
	}{
		{"no credential", path + "/captions.m3u8", noAuth, 401, "missing bearer token"},
		{"expired", path + "/captions.m3u8" + expired, noAuth, 403, "captions URL expired"},
		{"expiry moved", path + "/captions.m3u8" + longer, noAuth, 403, "signature does not match"},
		{"another session's", path + "/captions.m3u8" + otherSession, noAuth, 403, "signature does not match"},
		{"another session's segment", path + "/captions/0.vtt" + otherSession, noAuth, 403, "signature does not match"},
		{"tampered", path + "/captions.m3u8" + tampered, noAuth, 403, "signature does not match"},
		{"sig not base64url", path + "/captions.m3u8" + strings.Replace(q, "sig=", "sig=+", 1)[:len(q)], noAuth, 401, "exp must be Unix seconds"},
		{"sig missing", path + "/captions.m3u8?exp=" + fmt.Sprint(exp.Unix()), noAuth, 401, "exp and sig are required"},
		// A valid signature beside a wrong bearer: the signature decides, on captions alone.
		{"signature beats a header", path + "/captions.m3u8" + q, map[string]string{"Authorization": "Bearer wrong"}, 200, ""},
		// The signature opens the captions, nothing else of the session's.
		{"messages", path + "/messages" + q, noAuth, 401, "missing bearer token"},
		{"events", path + "/events" + q, noAuth, 401, "missing bearer token"},
		{"sign another", path + "/captions/url" + q, noAuth, 401, "missing bearer token"},
	}
	for _, tc := range cases {
		method := http.MethodGet
		if strings.Contains(tc.path, "/captions/url") {
			method = http.MethodPost
		}
		res := h.do(method, tc.path, nil, tc.header)
		if res.status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, res.status, res.body, tc.status)
			continue
		}
		if tc.want != "" {
			if msg, _ := res.json(t)["error"].(string); !strings.Contains(msg, tc.want) {
				t.Errorf("%s: error %q, want %q", tc.name, msg, tc.want)
			}
		}
	}
	for _, ttl := range []string{"10s", "1000h", "soon"} {
		if _, res := captionsURL(t, h, sessionID, ttl); res.status != 400 || !strings.Contains(string(res.body), "ttl must be a duration from 1m0s to 720h0m0s") {
			t.Errorf("ttl %s: %d %s", ttl, res.status, res.body)
		}
	}
	if strings.Contains(h.logs.String(), "sig=") {
		t.Errorf("a signed URL reached the logs: %s", h.logs.String())
	}
}

// TestCaptionsPageAndEvents: the page is served to its signed URL with a strict policy, and
// its events are the session's transcripts alone, through the same signature.
func TestCaptionsPageAndEvents(t *testing.T) {
	h := newHarness(t)
	putLiveRecord(t, h, sessionID, time.Time{})
	storeSession(t, h, sessionID)
	signer := signedurl.New(signedurl.DeriveKey(testReadToken))
	q := "?" + signer.Query(sessionID, testNow.Add(time.Hour))
	h.secrets = append(h.secrets, signer.Sign(sessionID, testNow.Add(time.Hour)))

	res := h.do(http.MethodGet, "/v1/live/"+sessionID+"/captions.html"+q, nil, nil)
	if res.status != 200 || !strings.HasPrefix(res.header.Get("Content-Type"), "text/html") {
		t.Fatalf("page: %d %v", res.status, res.header)
	}
	csp := res.header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'nonce-") || strings.Contains(string(res.body), "NONCE") {
		t.Errorf("policy %q", csp)
	}
	if res.header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("Referrer-Policy %q", res.header.Get("Referrer-Policy"))
	}
	if !strings.Contains(string(res.body), `const src = "captions/events"`) || !strings.Contains(string(res.body), `new EventSource(src)`) {
		t.Error("the page does not open the captions' events")
	}

	all := h.openStream("/v1/live/"+sessionID+"/captions/events"+q, map[string]string{"Authorization": ""})
	if all.status != 200 {
		t.Fatalf("events: %d", all.status)
	}
	for _, want := range []string{"3 transcript partial_transcripts", "4 transcript final_transcripts", "5 transcript final_transcripts", "6 transcript final_transcripts"} {
		if got := summary(t, all.must(t)); got != want {
			t.Errorf("event %s, want %s", got, want)
		}
	}
	finals := h.openStream("/v1/live/"+sessionID+"/captions/events"+q[:len(q)]+"&partials=0", map[string]string{"Authorization": ""})
	if got := summary(t, finals.must(t)); got != "4 transcript final_transcripts" {
		t.Errorf("finals only: first event %s", got)
	}
	bad := h.openStream("/v1/live/other/captions/events"+q, map[string]string{"Authorization": ""})
	if bad.status != 403 {
		t.Errorf("another session's events with this signature: %d", bad.status)
	}
}

// TestCaptionsConcurrent: playlists and segments read while finals are stored (go test -race).
func TestCaptionsConcurrent(t *testing.T) {
	h := newHarness(t)
	putLiveRecord(t, h, sessionID, time.Time{})
	storeSession(t, h, sessionID)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for n := range 10 {
				if res := h.read("/v1/live/" + sessionID + "/captions.m3u8"); res.status != 200 {
					t.Errorf("playlist: %d", res.status)
				}
				if res := h.read(fmt.Sprintf("/v1/live/%s/captions/%d.vtt", sessionID, n%10)); res.status != 200 {
					t.Errorf("segment: %d %s", res.status, res.body)
				}
			}
		})
	}
	for i := range 10 {
		storeLive(t, h, sessionID, final(fmt.Sprintf("c%d", i), 30+float64(i), 30.5+float64(i), fmt.Sprintf("line %d", i)))
	}
	wg.Wait()
	res := h.read("/v1/live/" + sessionID + "/captions/5.vtt")
	for i := range 10 {
		if want := fmt.Sprintf("line %d", i); i < 6 && !strings.Contains(string(res.body), want) {
			t.Errorf("segment 5 lacks %q: %s", want, res.body)
		}
	}
}
