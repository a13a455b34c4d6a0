package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/store"
)

// The bad-input suite: every input below goes through the real serve and sandbox on loopback
// (or, for configuration files, through `scribehook serve --config`) and must get its status,
// a message that says what is wrong, and exactly the stored rows listed (none for a reject).
//
// The answers, and why:
//   - An authenticated callback is judged by its bytes, never by its headers (docs/design.md,
//     rules 1 and 2): whatever cannot be classified — malformed, truncated or empty JSON, a body that
//     is not an object, invalid UTF-8 (encoding/json would replace the bytes with U+FFFD and
//     the record would differ from what was sent), nesting beyond encoding/json's depth limit,
//     an unknown content encoding or a corrupt gzip, an event or live message type the model
//     does not know — is answered 200 "quarantined" and kept raw, with a reason.
//   - A wrong Content-Type on an authenticated callback is not a reason to lose it: the body is
//     classified as sent (a valid callback is stored, a form body is quarantined).
//   - Duplicate keys: Go's last-wins. The receiver classifies, checks the per-job token and
//     processes with the same decoder, so they agree on which member counts: the last id is
//     the job the token must serve (a first id of another job does not help to smuggle a
//     delivery past the token). The raw bytes are stored, so nothing is lost. The sandbox
//     does the same (the last audio_url is validated).
//   - Huge numbers: kept byte for byte where the model keeps raw JSON (custom_metadata:
//     stored and processed); where the model wants an int (error.code 1e999), classification,
//     which reads only the envelope so that acks stay cheap for results of many MiB, stores the
//     delivery (200) and processing fails: after its retries the inbox row is marked failed,
//     visible and retryable. The sandbox answers 422 naming the field.
//   - Unauthenticated (unknown, revoked or foreign token, missing or bad signature, stale or
//     future timestamp, a captured signature under another id) is 401 with the reason;
//     oversized bodies (sent or decoded) are 413; nothing is stored. A replayed signed webhook
//     (same id, timestamp and body within the tolerance) is the service retrying: 200
//     "duplicate", stored once.
//   - Path tricks in ids never reach a file name or another route: Fiber routes by the escaped
//     path, so ..%2F..%2F is one parameter, unescaped to the literal id ../../ and looked up as
//     such (404 "job not found", never quoting it); a request line
//     beyond fasthttp's 4 KiB read buffer is 431. The sandbox's mux unescapes the id (404
//     naming it) and redirects a raw ../ to the cleaned path, which is then a 404.
//   - The sandbox answers a body that is not JSON by its Content-Type with 415, and invalid
//     UTF-8 with 400: both are client bugs a lenient stand-in would hide.
//   - Configuration files: every error names the line or the key; serve stops before it opens
//     the store.

// badCounts are the rows of the local store and the jobs of the sandbox.
type badCounts struct{ inbox, quarantine, jobs, sandboxJobs int }

// badCase is one bad input and the answer it must get.
type badCase struct {
	name string
	// sandbox sends the request to the sandbox instead of serve.
	sandbox bool
	method  string
	path    string
	header  http.Header
	body    []byte
	status  int
	msg     string // a substring of the answer's message
	reason  string // for a quarantined delivery: a substring of the stored reason
	stored  badCounts
	// after checks more once the case is answered and processed.
	after func(t *testing.T)
}

func TestBadInputSuite(t *testing.T) {
	const bodyLimit = 1 << 20
	l := newLoopWith(t, sandbox.Faults{}, func(o *serverOptions) { o.BodyLimit = bodyLimit })
	ctx := context.Background()
	db := openSQLiteRO(t, l.dbPath)
	tokenPath := func() string {
		return strings.TrimPrefix(l.callbackURL(api.KindPreRecorded), "http://"+l.addr)
	}
	ctJSON := http.Header{"Content-Type": {"application/json"}}
	bearer := http.Header{"Authorization": {"Bearer read-token"}}
	key := http.Header{"X-Service-Key": {e2eKey}, "Content-Type": {"application/json"}}
	with := func(h http.Header, kv ...string) http.Header {
		out := h.Clone()
		if out == nil {
			out = http.Header{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}

	// Tokens: one bound to job A by a first delivery, one never bound (quarantined deliveries
	// carry no job), one revoked.
	const jobA, jobB = "aaaaaaaa-0000-4000-8000-00000000000a", "bbbbbbbb-0000-4000-8000-00000000000b"
	errorBody := func(id, extra string) []byte {
		return []byte(`{"id":"` + id + `","event":"transcription.error","error":{"code":500,"message":"boom"}` + extra + `}`)
	}
	aPath := tokenPath()
	if code, body := l.post(aPath, ctJSON, errorBody(jobA, "")); code != 200 {
		t.Fatalf("binding delivery = %d %s", code, body)
	}
	qPath := tokenPath()
	revokedPath := tokenPath()
	if err := l.store.RevokeToken(ctx, store.HashToken(strings.TrimPrefix(revokedPath, "/v1/callbacks/"))); err != nil {
		t.Fatal(err)
	}
	// A job whose final callback (an error) is applied before the cases run; a live token; a
	// token minted eight days ago.
	const finalJob = "12121212-0000-4000-8000-000000000012"
	const sessA, sessB = "5e55a000-0000-4000-8000-00000000005a", "5e55b000-0000-4000-8000-00000000005b"
	finalPath := tokenPath()
	if code, body := l.post(finalPath, ctJSON, errorBody(finalJob, "")); code != 200 {
		t.Fatalf("final delivery = %d %s", code, body)
	}
	livePath := strings.TrimPrefix(l.callbackURL(api.KindLive), "http://"+l.addr)
	oldTok, _ := store.NewToken()
	if err := l.store.CreateToken(ctx, store.Token{Hash: store.HashToken(oldTok), Kind: api.KindPreRecorded, CreatedAt: time.Now().Add(-8 * 24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	liveBody := func(id, payload string) []byte {
		return []byte(`{"id":"` + id + `","event":"live.transcript","payload":` + payload + `}`)
	}
	transcriptOf := func(session string) string {
		return `{"session_id":"` + session + `","created_at":"2026-11-24T10:00:00Z","type":"transcript","data":{"id":"u1","is_final":true,"utterance":{"text":"x","words":[]}}}`
	}
	// A signed webhook the service will retry below.
	accepted := []byte(`{"event":"transcription.created","payload":{"id":"cccccccc-0000-4000-8000-00000000000c"}}`)
	acceptedHeaders := signAt(accountRouteSecret, "msg_accepted", time.Now(), accepted)
	if code, body := l.post("/v1/callbacks/account-route-token", acceptedHeaders, accepted); code != 200 {
		t.Fatalf("signed webhook = %d %s", code, body)
	}
	badWaitProcessed(t, db)

	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	success := readFile(t, "../../api/testdata/callback_success.json")
	var bomb, corrupt bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	_, _ = zw.Write(bytes.Repeat([]byte(" "), bodyLimit+1))
	_ = zw.Close()
	zw = gzip.NewWriter(&corrupt)
	_, _ = zw.Write(errorBody(jobB, ""))
	_ = zw.Close()
	corruptGz := corrupt.Bytes()[:corrupt.Len()-6]
	webhook := []byte(`{"event":"transcription.success","payload":{"id":"dddddddd-0000-4000-8000-00000000000d"}}`)
	now := time.Now()
	signedWith := func(id string, at time.Time, body []byte, kv ...string) http.Header {
		return with(signAt(accountRouteSecret, id, at, body), kv...)
	}
	huge := tokenPath()
	hugeMeta := tokenPath()
	plain := tokenPath()
	const hugeMetaJob = "eeeeeeee-0000-4000-8000-00000000000e"
	const plainJob = "ffffffff-0000-4000-8000-00000000000f"
	const hugeJob = "99999999-0000-4000-8000-000000000009"
	getJob := func(id string) (int, string) {
		code, body := httpDo(t, http.MethodGet, "http://"+l.addr+"/v1/jobs/"+id, bearer, nil)
		return code, string(body)
	}

	cases := []badCase{
		// The callback endpoint: authenticated but unreadable bodies are kept in quarantine.
		{name: "malformed JSON", method: "POST", path: qPath, header: ctJSON, body: []byte(`{"id":"` + jobB + `","event":`),
			status: 200, msg: "quarantined", reason: "not a JSON object", stored: badCounts{quarantine: 1}},
		{name: "truncated JSON (a success callback cut in half)", method: "POST", path: qPath, header: ctJSON, body: success[:len(success)/2],
			status: 200, msg: "quarantined", reason: "unexpected end of JSON input", stored: badCounts{quarantine: 1}},
		{name: "empty body", method: "POST", path: qPath, header: ctJSON, body: nil,
			status: 200, msg: "quarantined", reason: "unexpected end of JSON input", stored: badCounts{quarantine: 1}},
		{name: "JSON array instead of an object", method: "POST", path: qPath, header: ctJSON, body: []byte(`[{"id":"x"}]`),
			status: 200, msg: "quarantined", reason: "not a JSON object", stored: badCounts{quarantine: 1}},
		{name: "invalid UTF-8 in a string", method: "POST", path: qPath, header: ctJSON, body: errorBody(jobB, `,"custom_metadata":{"name":"caf`+"\xe9\xff"+`"}`),
			status: 200, msg: "quarantined", reason: "not valid UTF-8", stored: badCounts{quarantine: 1}},
		{name: "100k nested arrays", method: "POST", path: qPath, header: ctJSON, body: []byte(deep),
			status: 200, msg: "quarantined", reason: "exceeded max depth", stored: badCounts{quarantine: 1}},
		{name: "100k nested arrays inside a success payload", method: "POST", path: qPath, header: ctJSON,
			body:   []byte(`{"id":"` + jobB + `","event":"transcription.success","payload":{"words":` + deep + `}}`),
			status: 200, msg: "quarantined", reason: "exceeded max depth", stored: badCounts{quarantine: 1}},
		{name: "form body with a form content type", method: "POST", path: qPath,
			header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, body: []byte("id=" + jobB + "&event=transcription.error"),
			status: 200, msg: "quarantined", reason: "not a JSON object", stored: badCounts{quarantine: 1}},
		{name: "unknown content encoding", method: "POST", path: qPath, header: with(ctJSON, "Content-Encoding", "br"), body: errorBody(jobB, `,"n":1`),
			status: 200, msg: "quarantined", reason: `unsupported content-encoding "br"`, stored: badCounts{quarantine: 1}},
		{name: "corrupt gzip", method: "POST", path: qPath, header: with(ctJSON, "Content-Encoding", "gzip"), body: corruptGz,
			status: 200, msg: "quarantined", reason: "gzip body does not decode", stored: badCounts{quarantine: 1}},
		{name: "unknown job event name", method: "POST", path: qPath, header: ctJSON, body: []byte(`{"id":"` + jobB + `","event":"transcription.finished","payload":{}}`),
			status: 200, msg: "quarantined", reason: `event "transcription.finished" with this body`, stored: badCounts{quarantine: 1}},
		{name: "unknown live message type", method: "POST", path: qPath, header: ctJSON,
			body:   []byte(`{"id":"` + jobB + `","event":"live.hologram","payload":{"type":"hologram","session_id":"` + jobB + `","created_at":"2026-01-01T00:00:00.000Z"}}`),
			status: 200, msg: "quarantined", reason: `unknown live message type "hologram"`, stored: badCounts{quarantine: 1}},
		{name: "signed webhook with an unknown event", method: "POST", path: "/v1/callbacks/account-route-token",
			header: signedWith("msg_unknown", now, []byte(`{"event":"transcription.deleted","payload":{"id":"`+jobB+`"}}`)),
			body:   []byte(`{"event":"transcription.deleted","payload":{"id":"` + jobB + `"}}`),
			status: 200, msg: "quarantined", reason: `unknown account webhook event "transcription.deleted"`, stored: badCounts{quarantine: 1}},

		// Valid callbacks in odd clothes are stored and processed.
		{name: "valid callback sent as text/plain", method: "POST", path: plain, header: http.Header{"Content-Type": {"text/plain"}}, body: errorBody(plainJob, ""),
			status: 200, msg: "stored", stored: badCounts{inbox: 1, jobs: 1}},
		{name: "huge number kept raw in custom_metadata", method: "POST", path: hugeMeta, header: ctJSON, body: errorBody(hugeMetaJob, `,"custom_metadata":{"n":1e400,"m":-123456789012345678901234567890}`),
			status: 200, msg: "stored", stored: badCounts{inbox: 1, jobs: 1}, after: func(t *testing.T) {
				if code, body := getJob(hugeMetaJob); code != 200 || !strings.Contains(body, `"custom_metadata":{"n":1e400,"m":-123456789012345678901234567890}`) {
					t.Errorf("GET the job = %d %s", code, truncate([]byte(body)))
				}
			}},
		// Read as job A, the last id: the token accepts it, and it is A's error callback again.
		{name: "duplicate id keys: the last is the token's job", method: "POST", path: aPath, header: ctJSON,
			body:   []byte(`{"id":"` + jobB + `","id":"` + jobA + `","event":"transcription.error","error":{"code":501,"message":"again"}}`),
			status: 200, msg: "duplicate", after: func(t *testing.T) {
				if _, err := l.store.GetJob(ctx, jobB); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("the first of the duplicate ids made a job: %v", err)
				}
			}},

		// The id that authorises is the id applied: keys that authorise, in another case, make a
		// body ambiguous; it is kept in quarantine, nothing applied.
		{name: "Id beside id", method: "POST", path: qPath, header: ctJSON,
			body:   []byte(`{"id":"` + jobA + `","Id":"` + jobB + `","event":"transcription.error","error":{"code":500,"message":"x"}}`),
			status: 200, msg: "quarantined", reason: `key "Id" is a case variant of "id"`, stored: badCounts{quarantine: 1}},
		{name: "thin webhook with payload Id beside id", method: "POST", path: "/v1/callbacks/account-route-token",
			header: signedWith("msg_case", now, []byte(`{"event":"transcription.success","payload":{"id":"`+jobA+`","ID":"`+jobB+`"}}`), "Content-Type", "application/json"),
			body:   []byte(`{"event":"transcription.success","payload":{"id":"` + jobA + `","ID":"` + jobB + `"}}`),
			status: 200, msg: "quarantined", reason: `key payload."ID" is a case variant of "id"`, stored: badCounts{quarantine: 1}},
		{name: "live message naming another session", method: "POST", path: livePath, header: ctJSON, body: liveBody(sessA, transcriptOf(sessB)),
			status: 200, msg: "quarantined", reason: `payload.session_id "` + sessB + `" differs from id`, stored: badCounts{quarantine: 1}},
		{name: "live message with Session_ID beside session_id", method: "POST", path: livePath, header: ctJSON,
			body:   liveBody(sessA, `{"session_id":"`+sessA+`","Session_ID":"`+sessB+`","created_at":"2026-11-24T10:00:00Z","type":"transcript","data":{"id":"u1","is_final":true,"utterance":{"text":"x","words":[]}}}`),
			status: 200, msg: "quarantined", reason: `key payload."Session_ID" is a case variant of "session_id"`, stored: badCounts{quarantine: 1}},
		// After the final callback nothing changes the job: stored (the service stops retrying),
		// then set aside in quarantine with the reason.
		{name: "success callback after the job's final error", method: "POST", path: finalPath, header: ctJSON,
			body:   []byte(`{"id":"` + finalJob + `","event":"transcription.success","payload":{"metadata":{"audio_duration":1},"transcription":{"full_transcript":"forged","languages":["en"],"utterances":[]}}}`),
			status: 200, msg: "stored", reason: "job " + finalJob + " is final (transcription.error applied): a later transcription.success changes nothing",
			stored: badCounts{inbox: 1, quarantine: 1}, after: func(t *testing.T) {
				rec, err := l.store.GetJob(ctx, finalJob)
				if err != nil || rec.Job.Status != api.StatusError || len(rec.Job.Result) > 0 || rec.Local.ErrorMessage != "boom" || rec.Local.Deliveries != 1 {
					t.Errorf("the final job changed: %v %s %+v", err, rec.Job.Status, rec.Local)
				}
			}},

		// Rejected: nothing stored.
		{name: "duplicate id keys: the last is another job", method: "POST", path: aPath, header: ctJSON,
			body:   []byte(`{"id":"` + jobA + `","id":"` + jobB + `","event":"transcription.error","error":{"code":500,"message":"x"}}`),
			status: 401, msg: "token is for another job"},
		{name: "job token used for another job", method: "POST", path: aPath, header: ctJSON, body: errorBody(jobB, ""),
			status: 401, msg: "token is for another job"},
		// The token is bound to a job and its kind, for a while (issue 12).
		{name: "pre-recorded token sending a live message", method: "POST", path: qPath, header: ctJSON, body: liveBody(sessA, transcriptOf(sessA)),
			status: 401, msg: "token of a pre-recorded job cannot send a live.message callback"},
		{name: "live token sending a job result", method: "POST", path: livePath, header: ctJSON, body: errorBody(sessA, ""),
			status: 401, msg: "token of a live job cannot send a job.error callback"},
		{name: "job token sending an account webhook", method: "POST", path: qPath, header: ctJSON, body: webhook,
			status: 401, msg: "token of a pre-recorded job cannot send a account.webhook callback"},
		{name: "token minted 8 days ago", method: "POST", path: "/v1/callbacks/" + oldTok, header: ctJSON, body: errorBody(jobB, ""),
			status: 401, msg: "callback token has expired"},
		{name: "oversized body", method: "POST", path: qPath, header: ctJSON, body: bytes.Repeat([]byte("x"), bodyLimit+1),
			status: 413, msg: "request body exceeds 1048576 bytes"},
		{name: "gzip bomb", method: "POST", path: qPath, header: with(ctJSON, "Content-Encoding", "gzip"), body: bomb.Bytes(),
			status: 413, msg: "decoded request body exceeds 1048576 bytes"},
		{name: "missing token", method: "POST", path: "/v1/callbacks/", header: ctJSON, body: errorBody(jobB, ""),
			status: 404, msg: "no such route"},
		{name: "unknown token", method: "POST", path: "/v1/callbacks/not-a-token", header: ctJSON, body: errorBody(jobB, ""),
			status: 401, msg: "unknown callback token"},
		{name: "revoked token", method: "POST", path: revokedPath, header: ctJSON, body: errorBody(jobB, ""),
			status: 401, msg: "callback token is revoked"},
		{name: "path trick as the token", method: "POST", path: "/v1/callbacks/..%2F..%2Fv1%2Fjobs", header: ctJSON, body: errorBody(jobB, ""),
			status: 401, msg: "unknown callback token"},
		{name: "8 KiB token", method: "POST", path: "/v1/callbacks/" + strings.Repeat("t", 8<<10), header: ctJSON, body: errorBody(jobB, ""),
			status: 431, msg: "Request Header Fields Too Large"},
		{name: "GET on a callback URL", method: "GET", path: qPath, status: 405, msg: "Method Not Allowed"},
		{name: "signed route without a signature", method: "POST", path: "/v1/callbacks/account-route-token", header: ctJSON, body: webhook,
			status: 401, msg: "missing signature headers"},
		{name: "signed route, signature of zeros", method: "POST", path: "/v1/callbacks/account-route-token",
			header: signedWith("msg_zero", now, webhook, "webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 32))), body: webhook,
			status: 401, msg: "signature mismatch"},
		{name: "signed route, body changed after signing", method: "POST", path: "/v1/callbacks/account-route-token",
			header: signedWith("msg_changed", now, webhook), body: append(bytes.Clone(webhook), ' '),
			status: 401, msg: "signature mismatch"},
		{name: "stale signature (6 minutes)", method: "POST", path: "/v1/callbacks/account-route-token",
			header: signedWith("msg_stale", now.Add(-6*time.Minute), webhook), body: webhook,
			status: 401, msg: "timestamp too old"},
		{name: "signature from the future (6 minutes)", method: "POST", path: "/v1/callbacks/account-route-token",
			header: signedWith("msg_future", now.Add(6*time.Minute), webhook), body: webhook,
			status: 401, msg: "timestamp too new"},
		{name: "captured signature under another webhook-id", method: "POST", path: "/v1/callbacks/account-route-token",
			header: with(acceptedHeaders, "webhook-id", "msg_other"), body: accepted,
			status: 401, msg: "signature mismatch"},
		{name: "timestamp not a number", method: "POST", path: "/v1/callbacks/account-route-token",
			header: signedWith("msg_ts", now, webhook, "webhook-timestamp", "1e9"), body: webhook,
			status: 401, msg: "invalid webhook-timestamp header"},
		{name: "only a v1a signature", method: "POST", path: "/v1/callbacks/account-route-token",
			header: signedWith("msg_v1a", now, webhook, "webhook-signature", "v1a,"+base64.StdEncoding.EncodeToString(make([]byte, 64))), body: webhook,
			status: 401, msg: "no v1 signature in webhook-signature header"},
		{name: "missing webhook-id", method: "POST", path: "/v1/callbacks/account-route-token",
			header: signedWith("msg_noid", now, webhook, "webhook-id", ""), body: webhook,
			status: 401, msg: "missing webhook-id header"},
		{name: "replayed signed webhook (the service retrying)", method: "POST", path: "/v1/callbacks/account-route-token",
			header: acceptedHeaders, body: accepted, status: 200, msg: "duplicate"},

		// The read API.
		{name: "read API without a token", method: "GET", path: "/v1/jobs", status: 401, msg: "missing bearer token"},
		{name: "read API with a wrong token", method: "GET", path: "/v1/jobs", header: http.Header{"Authorization": {"Bearer nope"}},
			status: 401, msg: "invalid bearer token"},
		{name: "read API with Basic credentials", method: "GET", path: "/v1/jobs/" + jobA,
			header: http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("x:read-token"))}},
			status: 401, msg: "missing bearer token"},
		{name: "job id ..%2F..%2Fetc%2Fpasswd", method: "GET", path: "/v1/jobs/..%2F..%2Fetc%2Fpasswd", header: bearer,
			status: 404, msg: "job not found"},
		{name: "job id %2e%2e", method: "GET", path: "/v1/jobs/%2e%2e", header: bearer, status: 404, msg: "job not found"},
		{name: "job id with NUL", method: "GET", path: "/v1/jobs/" + jobA + "%00", header: bearer, status: 404, msg: "job not found"},
		{name: "raw ../ in the job path", method: "GET", path: "/v1/jobs/../../healthz", header: bearer, status: 404, msg: "no such route"},
		{name: "subtitles of a path-trick id", method: "GET", path: "/v1/jobs/..%2F" + jobA + "/subtitles.srt", header: bearer, status: 404, msg: "not found"},
		{name: "3 KiB job id", method: "GET", path: "/v1/jobs/" + strings.Repeat("j", 3<<10), header: bearer, status: 404, msg: "not found"},
		{name: "8 KiB job id", method: "GET", path: "/v1/jobs/" + strings.Repeat("j", 8<<10), header: bearer, status: 431, msg: "Request Header Fields Too Large"},
		{name: "list limit 0", method: "GET", path: "/v1/jobs?limit=0", header: bearer, status: 400, msg: "limit"},
		{name: "list limit beyond int64", method: "GET", path: "/v1/jobs?limit=99999999999999999999999", header: bearer, status: 400, msg: "limit must be an integer"},
		{name: "list unknown status", method: "GET", path: "/v1/jobs?status=finished", header: bearer, status: 400, msg: "status"},
		{name: "list bad percent-encoding", method: "GET", path: "/v1/jobs?status=%zz", header: bearer, status: 400, msg: "query string does not parse"},
		{name: "live messages after -1", method: "GET", path: "/v1/live/" + jobA + "/messages?after=-1", header: bearer, status: 400, msg: "after must be at least 0"},
		{name: "live messages limit not a number", method: "GET", path: "/v1/live/" + jobA + "/messages?limit=1e3", header: bearer, status: 400, msg: "limit must be an integer"},
		{name: "live events unknown category", method: "GET", path: "/v1/live/" + jobA + "/events?category=gossip", header: bearer, status: 400, msg: "category must be one of"},
		{name: "live events Last-Event-ID not a number", method: "GET", path: "/v1/live/" + jobA + "/events",
			header: with(bearer, "Last-Event-ID", "../1"), status: 400, msg: "Last-Event-ID must be a message sequence number"},
		{name: "dead letters since not a date", method: "GET", path: "/v1/deadletters?since=yesterday", header: bearer, status: 400, msg: "since"},
		{name: "dead letter replay of a path trick", method: "POST", path: "/v1/deadletters/..%2F1/replay", header: bearer, status: 400, msg: "dead letter id must be a positive integer"},
		{name: "dead letter replay beyond int64", method: "POST", path: "/v1/deadletters/99999999999999999999/replay", header: bearer, status: 400, msg: "dead letter id must be a positive integer"},
		{name: "dead letter replay of an unknown id", method: "POST", path: "/v1/deadletters/424242/replay", header: bearer, status: 404, msg: "dead letter 424242 not found"}, // a number the route parsed, not the request's text
		{name: "failed deliveries since not a date", method: "GET", path: "/v1/inbox/failed?since=yesterday", header: bearer, status: 400, msg: "since: must be an ISO 8601 date-time"},
		{name: "failed deliveries of an unknown kind", method: "GET", path: "/v1/inbox/failed?kind=%3Cscript%3E", header: bearer, status: 400, msg: "kind: must be one of"},
		{name: "failed delivery replay of a path trick", method: "POST", path: "/v1/inbox/..%2F1/replay", header: bearer, status: 400, msg: "failed delivery id must be a positive integer"},
		{name: "failed delivery replay of an unknown id", method: "POST", path: "/v1/inbox/424242/replay", header: bearer, status: 404, msg: "failed delivery 424242 not found"},
		{name: "failed deliveries replayed without a filter", method: "POST", path: "/v1/inbox/replay", header: bearer, status: 400, msg: "filter: give ids, job_id, kind, since, until or error; all=true replays every failed delivery"},

		// The sandbox's REST API: the service's envelope, nothing created.
		{name: "sandbox: missing key", sandbox: true, method: "POST", path: "/v2/pre-recorded", header: ctJSON, body: []byte(`{"audio_url":"https://e.com/a.wav"}`),
			status: 401, msg: "missing API key"},
		{name: "sandbox: wrong key", sandbox: true, method: "POST", path: "/v2/pre-recorded", header: with(key, "x-service-key", "nope"), body: []byte(`{"audio_url":"https://e.com/a.wav"}`),
			status: 401, msg: "invalid API key"},
		{name: "sandbox: malformed JSON", sandbox: true, method: "POST", path: "/v2/pre-recorded", header: key, body: []byte(`{"audio_url" "https://e.com/a.wav"}`),
			status: 400, msg: "request body is not valid JSON"},
		{name: "sandbox: truncated JSON", sandbox: true, method: "POST", path: "/v2/pre-recorded", header: key, body: []byte(`{"audio_url":"https://e.com/a.wav","subtitles":tr`),
			status: 400, msg: "request body is not valid JSON"},
		{name: "sandbox: empty body", sandbox: true, method: "POST", path: "/v2/pre-recorded", header: key, status: 400, msg: "request body is empty"},
		{name: "sandbox: JSON array", sandbox: true, method: "POST", path: "/v2/pre-recorded", header: key, body: []byte(`[{"audio_url":"https://e.com/a.wav"}]`),
			status: 400, msg: "request body must be a JSON object"},
		{name: "sandbox: text/plain", sandbox: true, method: "POST", path: "/v2/pre-recorded", header: with(key, "Content-Type", "text/plain"), body: []byte(`{"audio_url":"https://e.com/a.wav"}`),
			status: 415, msg: `Content-Type must be application/json (got "text/plain")`},
		{name: "sandbox: form body", sandbox: true, method: "POST", path: "/v2/live", header: with(key, "Content-Type", "application/x-www-form-urlencoded"), body: []byte(`sample_rate=8000`),
			status: 415, msg: "Content-Type must be application/json"},
		{name: "sandbox: invalid UTF-8", sandbox: true, method: "POST", path: "/v2/pre-recorded", header: key, body: []byte("{\"audio_url\":\"https://e.com/\xff.wav\"}"),
			status: 400, msg: "request body is not valid UTF-8"},
		{name: "sandbox: 100k nested arrays", sandbox: true, method: "POST", path: "/v2/pre-recorded", header: key, body: []byte(`{"audio_url":"https://e.com/a.wav","custom_metadata":{"a":` + deep + `}}`),
			status: 400, msg: "exceeded max depth"},
		{name: "sandbox: huge integer", sandbox: true, method: "POST", path: "/v2/pre-recorded", header: key, body: []byte(`{"audio_url":"https://e.com/a.wav","diarization_config":{"number_of_speakers":1e999}}`),
			status: 422, msg: "invalid parameter diarization_config.number_of_speakers"},
		{name: "sandbox: huge float", sandbox: true, method: "POST", path: "/v2/live", header: key, body: []byte(`{"endpointing":1e999}`),
			status: 422, msg: "invalid parameter endpointing"},
		{name: "sandbox: duplicate keys, the last is validated", sandbox: true, method: "POST", path: "/v2/pre-recorded", header: key,
			body: []byte(`{"audio_url":"https://e.com/a.wav","audio_url":"ftp://e.com/a.wav"}`), status: 400, msg: "audio_url"},
		{name: "sandbox: wrong type", sandbox: true, method: "POST", path: "/v2/pre-recorded", header: key, body: []byte(`{"audio_url":"https://e.com/a.wav","diarization":"yes"}`),
			status: 422, msg: "invalid parameter diarization"},
		{name: "sandbox: unknown callback method", sandbox: true, method: "POST", path: "/v2/pre-recorded", header: key,
			body:   []byte(`{"audio_url":"https://e.com/a.wav","callback":true,"callback_config":{"url":"https://e.com/cb","method":"PATCH"}}`),
			status: 400, msg: "callback_config.method"},
		{name: "sandbox: oversized body", sandbox: true, method: "POST", path: "/v2/pre-recorded", header: key,
			body:   []byte(`{"audio_url":"https://e.com/a.wav","context_prompt":"` + strings.Repeat("x", 1<<20) + `"}`),
			status: 413, msg: "request body exceeds 1048576 bytes"},
		{name: "sandbox: invalid region", sandbox: true, method: "POST", path: "/v2/live?region=mars", header: key, body: []byte(`{}`),
			status: 422, msg: "invalid parameter region"},
		{name: "sandbox: list limit 0", sandbox: true, method: "GET", path: "/v2/pre-recorded?limit=0", header: key, status: 400, msg: "invalid request parameters"},
		{name: "sandbox: id ..%2F..%2Fetc%2Fpasswd", sandbox: true, method: "GET", path: "/v2/pre-recorded/..%2F..%2Fetc%2Fpasswd", header: key,
			status: 404, msg: "pre-recorded job ../../etc/passwd not found"},
		{name: "sandbox: id %2e%2e", sandbox: true, method: "GET", path: "/v2/live/%2e%2e", header: key, status: 404, msg: "live session .. not found"},
		{name: "sandbox: id with NUL", sandbox: true, method: "DELETE", path: "/v2/pre-recorded/%00", header: key, status: 404, msg: "pre-recorded job \x00 not found"},
		{name: "sandbox: raw ../ (redirected, then unknown)", sandbox: true, method: "GET", path: "/v2/pre-recorded/../../etc/passwd", header: key,
			status: 404, msg: "Cannot GET /etc/passwd"},
		{name: "sandbox: 8 KiB id", sandbox: true, method: "GET", path: "/v2/transcription/" + strings.Repeat("j", 8<<10), header: key, status: 404, msg: "not found"},
		{name: "sandbox: live socket with a wrong token", sandbox: true, method: "GET", path: "/v2/live?token=..%2Fnope", status: 401, msg: "invalid or expired session token"},

		// Last: a delivery whose processing cannot succeed (its body does not decode) is failed at
		// once, no retry changing its bytes.
		{name: "huge number where the model wants an int", method: "POST", path: huge, header: ctJSON,
			body:   []byte(`{"id":"` + hugeJob + `","event":"transcription.error","error":{"code":1e999,"message":"x"}}`),
			status: 200, msg: "stored", stored: badCounts{inbox: 1}, after: func(t *testing.T) {
				var status, lastError string
				testwait.For(t, "the undecodable row to be marked failed", 30*time.Second, func() bool {
					err := db.QueryRow("SELECT status, last_error FROM inbox WHERE job_id = ?", hugeJob).Scan(&status, &lastError)
					return err == nil && status == string(store.InboxFailed)
				})
				if !strings.Contains(lastError, "decode job callback") {
					t.Errorf("last error = %q", lastError)
				}
				if _, err := l.store.GetJob(ctx, hugeJob); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("job recorded from an undecodable delivery: %v", err)
				}
			}},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := badCountsOf(t, db, l.sandbox.URL)
			base := "http://" + l.addr
			if tc.sandbox {
				base = l.sandbox.URL
			}
			code, body := httpDo(t, tc.method, base+tc.path, tc.header, tc.body)
			msg := badMessage(body)
			if code != tc.status || !strings.Contains(msg, tc.msg) {
				t.Errorf("answered %d %q, want %d with %q (body %s)", code, msg, tc.status, tc.msg, truncate(body))
			}
			if tc.stored.inbox > 0 {
				badWaitProcessed(t, db)
			}
			after := badCountsOf(t, db, l.sandbox.URL)
			got := badCounts{after.inbox - before.inbox, after.quarantine - before.quarantine, after.jobs - before.jobs, after.sandboxJobs - before.sandboxJobs}
			if got != tc.stored {
				t.Errorf("stored %+v, want %+v", got, tc.stored)
			}
			if tc.reason != "" {
				q, err := l.store.Quarantined(ctx, 1)
				if err != nil || len(q) != 1 || !strings.Contains(q[0].Reason, tc.reason) {
					t.Errorf("quarantine reason: %v %+v, want %q", err, q, tc.reason)
				}
			}
			if tc.after != nil {
				tc.after(t)
			}
		})
	}
	if len(cases) < 40 {
		t.Fatalf("only %d cases", len(cases))
	}
}

// badMessage is what an answer says: the receiver's error or ack status, or the service
// envelope's message with its validation errors.
func badMessage(body []byte) string {
	var m struct {
		Error      string          `json:"error"`
		Message    string          `json:"message"`
		Status     json.RawMessage `json:"status"`
		Validation []string        `json:"validation_errors"`
	}
	if json.Unmarshal(body, &m) != nil {
		return string(body)
	}
	var status string
	_ = json.Unmarshal(m.Status, &status)
	return strings.Join(append([]string{m.Error, m.Message, status}, m.Validation...), " ")
}

// badCountsOf counts the local store's rows (the inbox whatever the rows' status) and the
// sandbox's jobs.
func badCountsOf(t *testing.T, db *sql.DB, sandboxURL string) badCounts {
	t.Helper()
	var c badCounts
	for _, q := range []struct {
		sql string
		n   *int
	}{
		{"SELECT count(*) FROM inbox", &c.inbox},
		{"SELECT count(*) FROM quarantine", &c.quarantine},
		{"SELECT count(*) FROM jobs", &c.jobs},
	} {
		if err := db.QueryRow(q.sql).Scan(q.n); err != nil {
			t.Fatal(err)
		}
	}
	var page api.Page
	getJSON(t, sandboxURL+"/v2/transcription?limit=100", http.Header{"X-Service-Key": {e2eKey}}, &page)
	c.sandboxJobs = len(page.Items)
	return c
}

// badWaitProcessed waits until no inbox row is pending.
func badWaitProcessed(t *testing.T, db *sql.DB) {
	t.Helper()
	testwait.For(t, "the inbox to be processed", 20*time.Second, func() bool {
		var n int
		return db.QueryRow("SELECT count(*) FROM inbox WHERE status = 'pending'").Scan(&n) == nil && n == 0
	})
}

// TestBadInputConfigFiles runs `scribehook serve` on bad configuration files: each stops with
// an error naming the line or the key, before the store is opened.
func TestBadInputConfigFiles(t *testing.T) {
	dir := t.TempDir()
	dsn := filepath.Join(dir, "never.db")
	t.Setenv("SCRIBEHOOK_STORE_DSN", dsn)
	t.Setenv("SCRIBEHOOK_LISTEN", "127.0.0.1:0")
	t.Setenv("SCRIBEHOOK_CONFIG", "")
	cases := []struct {
		name, file, env, want string
	}{
		{"malformed YAML", "listen: [\n", "", "config: yaml: line 1: did not find expected node content"},
		{"truncated YAML (unclosed quote)", "store:\n  dsn: \"x.db\n", "", "config: yaml: line 2: found unexpected end of stream"},
		{"wrong type", "listen: [a, b]\n", "", "config: line 1: listen must be a string (got a list)"},
		{"invalid UTF-8", "listen: 127.0.0.1:1\npublic_url: http://caf\xe9/\n", "", "config: yaml: line 2: invalid trailing UTF-8 octet"},
		{"control character", "listen: \"127.0.0.1:1\x00\"\n", "", "config: yaml: line 1: control characters are not allowed"},
		{"100k nested lists", "listen: " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n", "", "config: yaml: line 1: exceeded max depth of 10000"},
		{"huge float for an integer", "receiver:\n  partitions: 1e999\n", "", `config: line 2: receiver.partitions must be an integer (got "1e999")`},
		{"integer beyond int64", "receiver:\n  body_limit: 99999999999999999999\n", "", `config: line 2: receiver.body_limit must be an integer (got "99999999999999999999")`},
		{"integer out of range", "receiver:\n  partitions: 100000\n", "", "config: receiver.partitions must be between 1 and 256 (got 100000)"},
		{"duplicate keys", "listen: 127.0.0.1:1\nlisten: 127.0.0.1:2\n", "", `config: line 2: key "listen" is given twice (first on line 1)`},
		{"unknown key", "stroe: {dsn: x}\n", "", `config: line 1: unknown key "stroe" (did you mean "store"?)`},
		{"a secret in the file", "service:\n  api_key: sk-123\n", "", `config: line 2: unknown key "service.api_key" (secrets are not read from the file`},
		{"several documents", "listen: a:1\n---\nlisten: b:2\n", "", "config: the file holds several YAML documents: keep one"},
		{"a list instead of a mapping", "- listen\n", "", "config: line 1: the configuration must be a mapping of keys (got a list)"},
		{"path trick as an environment variable name", "routes:\n  - {name: a, token_env: ../../etc/passwd}\n", "", `routes[0].token_env must be the name of an environment variable`},
		{"bad override", "", "SCRIBEHOOK_RECEIVER_PARTITIONS=1e999", "SCRIBEHOOK_RECEIVER_PARTITIONS"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "scribehook.yaml")
			writeFile(t, path, []byte(tc.file))
			if k, v, ok := strings.Cut(tc.env, "="); ok {
				t.Setenv(k, v)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _, err := runCmd(ctx, nil, "--config", path, "serve")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("serve = %v, want an error with %q", err, tc.want)
			}
			if _, err := os.Stat(dsn); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the store was created: %v", err)
			}
		})
	}
}
