package submitter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sandbox/audio"
	"github.com/scribehook/scribehook/sandbox/engine"
	"github.com/scribehook/scribehook/submitter"
)

// Create a pre-recorded job, follow it until it is final, and find it again in the service's
// list by its custom metadata. Without callbacks a client has to poll like this; the root
// package's Submitter and WaitJob get the result by callback instead.
func ExampleClient_CreatePreRecorded() {
	service, audioURL, stop := startService()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	client, err := submitter.New(service, "example-service-key")
	if err != nil {
		fmt.Println(err)
		return
	}
	created, err := client.CreatePreRecorded(ctx, api.PreRecordedRequest{
		AudioURL:       audioURL,
		CustomMetadata: json.RawMessage(`{"batch":"example"}`),
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	job, err := client.GetPreRecorded(ctx, created.ID)
	for err == nil && !job.Status.Final() {
		time.Sleep(50 * time.Millisecond)
		job, err = client.GetPreRecorded(ctx, created.ID)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("status:", job.Status)
	result, err := job.DecodeResult()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("transcript:", result.Transcription.FullTranscript)

	page, err := client.ListPreRecorded(ctx, api.ListQuery{
		Status:         []api.JobStatus{api.StatusDone},
		CustomMetadata: json.RawMessage(`{"batch":"example"}`),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("listed:", len(page.Items), page.Items[0].ID == created.ID)
	// Output:
	// status: done
	// transcript: Hello from the sandbox
	// listed: 1 true
}

// startService starts a sandbox of the service on loopback (its scripted engine returns the
// words of a <audio URL>.json sidecar) and a file server with a short recording and its
// sidecar. It returns the service's base URL, the recording's URL and what stops both.
func startService() (serviceURL, audioURL string, stop func()) {
	eng, err := engine.NewRegistry().New(engine.ScriptedName)
	if err != nil {
		panic(err)
	}
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	sb, err := sandbox.New(sandbox.Config{
		APIKey: "example-service-key", Engine: eng, Logger: logrus.NewEntry(quiet),
		// The recording is on loopback, which the sandbox refuses to fetch by default.
		AllowFetch: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	})
	if err != nil {
		panic(err)
	}
	// Two seconds of a quiet tone: the sidecar, not the sound, decides the words.
	const rate = 16000
	samples := make([]float32, 2*rate)
	for i := range samples {
		samples[i] = float32(0.1 * math.Sin(2*math.Pi*440*float64(i)/rate))
	}
	var wav bytes.Buffer
	if err := audio.Encode16(&wav, [][]float32{samples}, rate); err != nil {
		panic(err)
	}
	sidecar := []byte(`{"utterances":[{"words":[
		{"word":"Hello","start":0.2,"end":0.5},{"word":"from","start":0.6,"end":0.8},
		{"word":"the","start":0.9,"end":1.0},{"word":"sandbox","start":1.1,"end":1.6}]}]}`)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello.wav", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(wav.Bytes()) })
	mux.HandleFunc("GET /hello.wav.json", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(sidecar) })
	files := httptest.NewServer(mux)
	hs := httptest.NewServer(sb.Handler())
	return hs.URL, files.URL + "/hello.wav", func() {
		files.Close()
		hs.CloseClientConnections()
		hs.Close()
		_ = sb.Close()
	}
}
