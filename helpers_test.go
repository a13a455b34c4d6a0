package scribehook_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sandbox/audio"
	"github.com/scribehook/scribehook/sandbox/engine"
)

// The examples' stand-ins: a sandbox of the service and a file server holding one recording,
// both on loopback. They are test code, kept out of the examples so that those show only
// what a program using the kit writes.

// sandboxWorld is a sandbox of the service, reached with APIKey at URL, and a file server
// whose AudioURL serves a WAV and AudioURL + ".json" its sidecar.
type sandboxWorld struct {
	URL      string
	APIKey   string
	AudioURL string
	files    *httptest.Server
	service  *httptest.Server
	sb       *sandbox.Server
}

// startSandbox starts a sandbox with the scripted engine and serves a recording in which each
// sentence is one utterance: the scripted engine returns the sidecar's words, so the
// transcript is known in advance and the examples' output is deterministic. It panics on
// error, since examples have no *testing.T.
func startSandbox(sentences ...string) *sandboxWorld {
	const key = "example-service-key"
	eng, err := engine.NewRegistry().New(engine.ScriptedName)
	if err != nil {
		panic(err)
	}
	sb, err := sandbox.New(sandbox.Config{
		APIKey: key, Engine: eng, Logger: quietLogger(),
		// The recording is served on loopback, which the sandbox refuses to fetch by default.
		AllowFetch: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	})
	if err != nil {
		panic(err)
	}
	wav, sidecar := recording(sentences)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /talk.wav", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(wav) })
	mux.HandleFunc("GET /talk.wav.json", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(sidecar) })
	files := httptest.NewServer(mux)
	service := httptest.NewServer(sb.Handler())
	return &sandboxWorld{URL: service.URL, APIKey: key, AudioURL: files.URL + "/talk.wav", files: files, service: service, sb: sb}
}

// Close stops the file server and the sandbox, cutting its connections (to the kit among
// them) rather than waiting for idle ones.
func (w *sandboxWorld) Close() {
	w.files.Close()
	w.service.CloseClientConnections()
	w.service.Close()
	_ = w.sb.Close()
}

// recording is a WAV long enough for the sentences (a quiet tone: its content does not
// matter, the sidecar decides the words) and the sidecar timing each sentence's words
// 0.4 s apart, one sentence after another.
func recording(sentences []string) (wav, sidecar []byte) {
	type word struct {
		Word  string  `json:"word"`
		Start float64 `json:"start"`
		End   float64 `json:"end"`
	}
	type utterance struct {
		Words []word `json:"words"`
	}
	var utts []utterance
	t := 0.5
	for _, s := range sentences {
		var u utterance
		for _, w := range strings.Fields(s) {
			u.Words = append(u.Words, word{Word: w, Start: round(t), End: round(t + 0.3)})
			t += 0.4
		}
		utts = append(utts, u)
		t += 0.6
	}
	sidecar, err := json.Marshal(map[string]any{"utterances": utts})
	if err != nil {
		panic(err)
	}
	const rate = 16000
	samples := make([]float32, int((t+0.5)*rate))
	for i := range samples {
		samples[i] = float32(0.1 * math.Sin(2*math.Pi*440*float64(i)/rate))
	}
	var b bytes.Buffer
	if err := audio.Encode16(&b, [][]float32{samples}, rate); err != nil {
		panic(err)
	}
	return b.Bytes(), sidecar
}

// round keeps word times to milliseconds, as a service would send them.
func round(x float64) float64 { return math.Round(x*1000) / 1000 }

func quietLogger() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}
