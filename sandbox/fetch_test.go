package sandbox_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/sandbox"
)

// origin is an HTTP server on one loopback address that counts its requests.
type origin struct {
	srv  *httptest.Server
	hits atomic.Int32
}

// startOrigin listens on host (127.0.0.1, or 127.0.0.2 where all of 127/8 is loopback, as on
// Linux; the test is skipped where it is not).
func startOrigin(t *testing.T, host string, h http.HandlerFunc) *origin {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", host, err)
	}
	o := &origin{}
	o.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.hits.Add(1)
		h(w, r)
	}))
	o.srv.Listener = ln
	o.srv.Start()
	t.Cleanup(o.srv.Close)
	return o
}

func (o *origin) port() string {
	_, p, _ := net.SplitHostPort(o.srv.Listener.Addr().String())
	return p
}

// serveFiles answers the paths of files with their bytes, 404 otherwise.
func serveFiles(files map[string][]byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}
}

// fetchEnv is a sandbox that allows fetches from allow only (nil: none) and logs to a buffer.
func fetchEnv(t *testing.T, allow []string, mutate func(*sandbox.Config)) (*env, *sandboxtest.Buffer) {
	t.Helper()
	logs := &sandboxtest.Buffer{}
	e := newEnv(t, func(c *sandbox.Config) {
		c.AllowFetch = []netip.Prefix{} // none, rather than nil, which newEnv takes for loopback
		for _, a := range allow {
			c.AllowFetch = append(c.AllowFetch, netip.MustParsePrefix(a))
		}
		l := logrus.New()
		l.SetOutput(logs)
		l.SetLevel(logrus.DebugLevel)
		c.Logger = logrus.NewEntry(l)
		if mutate != nil {
			mutate(c)
		}
	})
	return e, logs
}

// outcome is what a job's owner learns of its end.
type outcome struct {
	status  api.JobStatus
	code    int
	message string // from post_session_metadata.error_message
	file    bool
	words   string
}

func (e *env) run(audioURL string) outcome {
	e.t.Helper()
	created, err := e.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: audioURL})
	if err != nil {
		e.t.Fatalf("create job for %s: %v", audioURL, err)
	}
	job := e.waitJob(created.ID, api.KindPreRecorded)
	o := outcome{status: job.Status, file: job.File != nil}
	if job.ErrorCode != nil {
		o.code = *job.ErrorCode
	}
	if len(job.PostSessionMetadata) > 0 {
		var m struct {
			ErrorMessage string `json:"error_message"`
		}
		_ = json.Unmarshal(job.PostSessionMetadata, &m)
		o.message = m.ErrorMessage
	}
	if len(job.Result) > 0 && apitest.MustResult(&job).Transcription != nil {
		o.words = apitest.MustResult(&job).Transcription.FullTranscript
	}
	return o
}

// fetchFailed is the one outcome of every audio_url that could not be fetched.
var fetchFailed = outcome{status: api.StatusError, code: 400, message: "audio_url could not be fetched"}

func TestFetchRefusesLoopbackUnlessAllowed(t *testing.T) {
	wav := speechLike(t, 2, [][2]float64{{0.3, 1.5}}, 16000)
	files := startOrigin(t, "127.0.0.1", serveFiles(map[string][]byte{"/a.wav": wav}))
	port := files.port()
	// Only loopback spellings: the other ranges are checked on addresses in internal/netguard,
	// never dialled. Numeric spellings (2130706433) are netguard's too: should the guard not
	// parse them, they would go to the machine's resolver.
	urls := []string{
		"http://127.0.0.1:" + port + "/a.wav",
		"http://[::ffff:127.0.0.1]:" + port + "/a.wav",
		"http://localhost:" + port + "/a.wav",
		"http://0.0.0.0:" + port + "/a.wav",
		"http://[::]:" + port + "/a.wav",
		"http://[::1]:" + port + "/a.wav",
	}

	refusing, logs := fetchEnv(t, nil, nil)
	for _, u := range urls {
		if got := refusing.run(u + "?sig=s3cr3t"); got != fetchFailed {
			t.Errorf("without allowance, %s: %+v, want %+v", u, got, fetchFailed)
		}
	}
	if n := files.hits.Load(); n != 0 {
		t.Fatalf("the loopback server was reached %d times without the allowance", n)
	}
	if l := logs.String(); !strings.Contains(l, "refused unless allow-listed") || strings.Contains(l, "s3cr3t") {
		t.Errorf("log does not give the reason, or quotes the query:\n%s", l)
	}

	allowing, _ := fetchEnv(t, []string{"127.0.0.0/8"}, nil)
	for _, u := range urls[:3] {
		if got := allowing.run(u); got.status != api.StatusDone || !got.file || got.words == "" {
			t.Errorf("with 127.0.0.0/8 allowed, %s: %+v, want done", u, got)
		}
	}
	if n := files.hits.Load(); n < 3 {
		t.Errorf("the loopback server was reached %d times, want at least 3", n)
	}
}

// A redirect from an allowed host to a refused one fails the job: only 127.0.0.2 is allowed,
// the audio really is on 127.0.0.1.
func TestFetchRedirectToRefusedAddress(t *testing.T) {
	wav := speechLike(t, 2, [][2]float64{{0.3, 1.5}}, 16000)
	inner := startOrigin(t, "127.0.0.1", serveFiles(map[string][]byte{"/a.wav": wav}))
	outer := startOrigin(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/here.wav":
			_, _ = w.Write(wav)
		case "/local":
			http.Redirect(w, r, "/here.wav", http.StatusFound)
		case "/by-name":
			http.Redirect(w, r, "http://localhost:"+inner.port()+"/a.wav", http.StatusFound)
		default:
			http.Redirect(w, r, inner.srv.URL+"/a.wav", http.StatusMovedPermanently)
		}
	})
	e, _ := fetchEnv(t, []string{"127.0.0.2/32"}, nil)
	for _, path := range []string{"/away", "/by-name"} {
		if got := e.run(outer.srv.URL + path); got != fetchFailed {
			t.Errorf("redirect %s to 127.0.0.1: %+v, want %+v", path, got, fetchFailed)
		}
	}
	if n := inner.hits.Load(); n != 0 {
		t.Errorf("the refused server was reached %d times", n)
	}
	// Redirects within the allowance are followed.
	if got := e.run(outer.srv.URL + "/local"); got.status != api.StatusDone || got.words == "" {
		t.Errorf("redirect within 127.0.0.2: %+v, want done", got)
	}
}

// streamed is a copy of wav whose header announces data to the end of the stream, so that
// the decoder reads every byte of the body.
func streamed(wav []byte) []byte {
	s := append([]byte(nil), wav...)
	binary.LittleEndian.PutUint32(s[4:], 0xFFFFFFFF)
	binary.LittleEndian.PutUint32(s[40:], 0xFFFFFFFF)
	return s
}

// A body over the limit fails the job after reading about the limit: an endless stream is cut
// off, a declared length over the limit is not read at all, and a body of exactly the limit
// passes.
func TestFetchSizeCap(t *testing.T) {
	const limit = 1 << 20
	head := streamed(speechLike(t, 0.01, nil, 16000))[:44]
	var written atomic.Int64
	streamDone := make(chan struct{}, 1)
	exact := streamed(speechLike(t, 1, [][2]float64{{0.2, 0.8}}, 16000))
	exact = append(exact, make([]byte, limit-len(exact))...)
	overByOne := append(append([]byte(nil), exact...), 0)
	files := startOrigin(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/endless.wav":
			defer func() { streamDone <- struct{}{} }()
			_, _ = w.Write(head)
			chunk := make([]byte, 64<<10)
			// 1 GiB at most, should the sandbox not stop reading.
			for written.Load() < 1<<30 {
				n, err := w.Write(chunk)
				written.Add(int64(n))
				if err != nil {
					return
				}
			}
		case "/declared.wav":
			w.Header().Set("Content-Length", "2000000")
			_, _ = w.Write(head)
		case "/exact.wav":
			_, _ = w.Write(exact)
		case "/over-by-one.wav":
			_, _ = w.Write(overByOne)
		}
	})
	e, logs := fetchEnv(t, []string{"127.0.0.1/32"}, func(c *sandbox.Config) { c.MaxFetchBytes = limit })

	if got := e.run(files.srv.URL + "/endless.wav"); got != fetchFailed {
		t.Errorf("endless body: %+v, want %+v", got, fetchFailed)
	}
	select {
	case <-streamDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the endless body is still being read")
	}
	// What the server wrote is the limit plus what the sockets' buffers held.
	if n := written.Load(); n < limit || n > limit+32<<20 {
		t.Errorf("server wrote %d bytes of an endless body, want about the limit (%d)", n, limit)
	}
	if got := e.run(files.srv.URL + "/declared.wav"); got != fetchFailed {
		t.Errorf("declared length over the limit: %+v, want %+v", got, fetchFailed)
	}
	if got := e.run(files.srv.URL + "/over-by-one.wav"); got != fetchFailed {
		t.Errorf("one byte over the limit: %+v, want %+v", got, fetchFailed)
	}
	if got := e.run(files.srv.URL + "/exact.wav"); got.status != api.StatusDone {
		t.Errorf("body of exactly the limit: %+v, want done", got)
	}
	if l := logs.String(); !strings.Contains(l, "body exceeds 1048576 bytes") {
		t.Errorf("log does not say the body was too large:\n%s", l)
	}
}

// The sidecar goes through the same guard: one that redirects to a refused address is not
// read, and the words are the engine's own; one over its limit is ignored too.
func TestFetchSidecarGuarded(t *testing.T) {
	wav := speechLike(t, 2, [][2]float64{{0.3, 1.5}}, 16000)
	sidecar := []byte(`{"utterances":[{"words":[{"word":"internal","start":0.3,"end":0.7},{"word":"secret","start":0.8,"end":1.2}]}]}`)
	inner := startOrigin(t, "127.0.0.1", serveFiles(map[string][]byte{"/a.wav.json": sidecar}))
	padded := append(bytes.Repeat([]byte(" "), 300<<10), sidecar...)
	outer := startOrigin(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/a.wav", "/big.wav", "/same.wav":
			_, _ = w.Write(wav)
		case "/a.wav.json":
			http.Redirect(w, r, inner.srv.URL+"/a.wav.json", http.StatusFound)
		case "/big.wav.json":
			_, _ = w.Write(padded)
		case "/same.wav.json":
			_, _ = w.Write(sidecar)
		default:
			http.NotFound(w, r)
		}
	})
	e, _ := fetchEnv(t, []string{"127.0.0.2/32"}, func(c *sandbox.Config) { c.MaxFetchBytes = 256 << 10 })
	for _, path := range []string{"/a.wav", "/big.wav"} {
		got := e.run(outer.srv.URL + path)
		if got.status != api.StatusDone || got.words == "" || strings.Contains(got.words, "secret") {
			t.Errorf("%s: %+v, want done with the engine's own words", path, got)
		}
	}
	if n := inner.hits.Load(); n != 0 {
		t.Errorf("the refused sidecar server was reached %d times", n)
	}
	// The control: a sidecar on the allowed host within the limit is used.
	if got := e.run(outer.srv.URL + "/same.wav"); got.words != "internal secret" {
		t.Errorf("allowed sidecar: words %q, want %q", got.words, "internal secret")
	}
}

// Every way a fetch can fail ends the job the same way: code, message, no file.
func TestFetchFailuresLookAlike(t *testing.T) {
	wav := speechLike(t, 1, [][2]float64{{0.2, 0.8}}, 16000)
	big := append(streamed(wav), make([]byte, 64<<10)...)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	files := startOrigin(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/a.wav":
			_, _ = w.Write(wav)
		case "/big.wav":
			_, _ = w.Write(big)
		case "/redirect":
			http.Redirect(w, r, "http://127.0.0.2:"+r.URL.Query().Get("port")+"/a.wav", http.StatusFound)
		case "/hang.wav":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/truncated.wav":
			w.Header().Set("Content-Length", strconv.Itoa(len(wav)))
			_, _ = w.Write(wav[:1000])
		case "/error.wav":
			http.Error(w, "boom", http.StatusInternalServerError)
		case "/json-api":
			_, _ = w.Write([]byte(`{"admin":true}`))
		default:
			http.NotFound(w, r)
		}
	})
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/a.wav"
	closed.Close()

	// Loopback allowed on 127.0.0.1 only, so that refused and failed fetches can be compared.
	e, logs := fetchEnv(t, []string{"127.0.0.1/32"}, func(c *sandbox.Config) {
		c.MaxFetchBytes = int64(len(wav)) + 1024
		c.FetchTimeout = 300 * time.Millisecond
	})
	cases := map[string]string{
		"refused loopback": "http://127.0.0.2:" + files.port() + "/a.wav",
		"refused mapped":   "http://[::ffff:127.0.0.2]:" + files.port() + "/a.wav",
		"refused 0.0.0.0":  "http://0.0.0.0:" + files.port() + "/a.wav",
		"refused IPv6":     "http://[::1]:" + files.port() + "/a.wav",
		"closed port":      closedURL,
		"timeout":          files.srv.URL + "/hang.wav",
		"over the limit":   files.srv.URL + "/big.wav",
		"not found":        files.srv.URL + "/missing.wav",
		"server error":     files.srv.URL + "/error.wav",
		"truncated body":   files.srv.URL + "/truncated.wav",
		"refused redirect": files.srv.URL + "/redirect?port=" + files.port(),
	}
	for name, u := range cases {
		if got := e.run(u); got != fetchFailed {
			t.Errorf("%s (%s): %+v, want %+v", name, u, got, fetchFailed)
		}
	}
	// Only what was fetched can be judged as audio.
	if got := e.run(files.srv.URL + "/json-api"); got.code != 422 {
		t.Errorf("allowed non-audio: %+v, want 422", got)
	}
	if got := e.run(files.srv.URL + "/a.wav"); got.status != api.StatusDone {
		t.Errorf("allowed audio: %+v, want done", got)
	}
	l := logs.String()
	for _, reason := range []string{"refused unless allow-listed", "connection refused", "Client.Timeout", "body exceeds", "answered 404", "answered 500"} {
		if !strings.Contains(l, reason) {
			t.Errorf("log does not give the reason %q", reason)
		}
	}
}
