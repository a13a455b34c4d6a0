package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sandbox/engine"
	"github.com/scribehook/scribehook/submitter"
)

// demodata holds the sample recording (made with flite by scripts/make-sample.py) and its
// sidecar, the words the scripted engine returns for it.
//
//go:embed demodata/sample.wav demodata/sample.wav.json
var demodata embed.FS

func newDemoCmd() *cobra.Command {
	var (
		outDir   string
		fast     bool
		engineNm string
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole loop on this machine: sandbox, a job with its callback, subtitles, a live session",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), cmd.OutOrStdout(), demoOptions{outDir: outDir, realtime: !fast, engine: engineNm})
		},
	}
	cmd.Flags().StringVar(&outDir, "out", "out/demo", "directory for the outputs")
	cmd.Flags().BoolVar(&fast, "fast", false, "stream the live session as fast as possible instead of in real time")
	cmd.Flags().StringVar(&engineNm, "engine", "scripted", "speech engine of the sandbox")
	return cmd
}

type demoOptions struct {
	outDir   string
	realtime bool
	engine   string
}

// runDemo starts the sandbox and a callback endpoint on loopback, submits the sample as a
// pre-recorded job, waits for its callback (no polling), writes the subtitles, then streams the
// same recording to a live session and prints the final transcripts as they arrive.
func runDemo(ctx context.Context, out io.Writer, opts demoOptions) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	if err := os.MkdirAll(filepath.Join(opts.outDir, "callbacks"), 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)

	eng, err := engine.NewRegistry().New(opts.engine)
	if err != nil {
		return err
	}
	key := randomKey()
	sb, err := sandbox.New(sandbox.Config{APIKey: key, Engine: eng, Logger: logrus.NewEntry(quiet)})
	if err != nil {
		return err
	}
	defer sb.Close()
	sbURL, stopSandbox, err := serveLoopback(sb.Handler())
	if err != nil {
		return err
	}
	defer stopSandbox()
	say("sandbox      %s (engine %s)", sbURL, eng.Name())

	hooks := &demoHooks{dir: filepath.Join(opts.outDir, "callbacks"), jobDone: make(chan api.JobCallback, 1), out: out}
	hookURL, stopHooks, err := serveLoopback(hooks)
	if err != nil {
		return err
	}
	defer stopHooks()
	say("callbacks to %s", hookURL)

	wav, _ := demodata.ReadFile("demodata/sample.wav")
	sidecar, _ := demodata.ReadFile("demodata/sample.wav.json")
	files := http.NewServeMux()
	files.HandleFunc("GET /sample.wav", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(wav) })
	files.HandleFunc("GET /sample.wav.json", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(sidecar) })
	filesURL, stopFiles, err := serveLoopback(files)
	if err != nil {
		return err
	}
	defer stopFiles()

	client, err := submitter.New(sbURL, key)
	if err != nil {
		return err
	}

	// 1. A pre-recorded job whose callback points back here.
	created, err := client.CreatePreRecorded(ctx, api.PreRecordedRequest{
		AudioURL:        filesURL + "/sample.wav",
		Callback:        api.Bool(true),
		CallbackConfig:  &api.CallbackConfig{URL: hookURL + "/v1/callbacks/demo", Method: http.MethodPost},
		Subtitles:       api.Bool(true),
		SubtitlesConfig: &api.SubtitlesConfig{Formats: []string{"srt", "vtt"}},
		Sentences:       api.Bool(true),
		Summarization:   api.Bool(true),
		CustomMetadata:  json.RawMessage(`{"source":"scribehook demo"}`),
	})
	if err != nil {
		return fmt.Errorf("create job: %w", err)
	}
	say("\npre-recorded job %s created; waiting for its callback…", created.ID)
	var cb api.JobCallback
	select {
	case cb = <-hooks.jobDone:
	case <-ctx.Done():
		return fmt.Errorf("no callback for job %s: %w", created.ID, ctx.Err())
	}
	if cb.Event != api.EventTranscriptionSuccess || cb.Payload == nil || cb.Payload.Transcription == nil {
		return fmt.Errorf("job %s failed: %+v", created.ID, cb.Error)
	}
	tr := cb.Payload.Transcription
	say("callback %s: %d utterances, %.1f s of audio", cb.Event, len(tr.Utterances), cb.Payload.Metadata.AudioDuration)
	for _, u := range tr.Utterances {
		say("  [%6.2f–%6.2f] %s", u.Start, u.End, u.Text)
	}
	if cb.Payload.Summarization != nil && cb.Payload.Summarization.Success {
		say("summary: %s", cb.Payload.Summarization.Results)
	}
	var written []string
	for _, s := range tr.Subtitles {
		p := filepath.Join(opts.outDir, "sample."+s.Format)
		if err := os.WriteFile(p, []byte(s.Subtitles), 0o644); err != nil {
			return fmt.Errorf("write subtitles: %w", err)
		}
		written = append(written, p)
	}

	// 2. A live session with the same recording, streamed like a microphone.
	live, err := client.CreateLive(ctx, api.LiveRequest{
		SampleRate:     api.Int(8000),
		Endpointing:    api.Float(0.3),
		Callback:       api.Bool(true),
		CallbackConfig: &api.LiveCallbackConfig{URL: hookURL + "/v1/callbacks/demo-live"},
	}, "")
	if err != nil {
		return fmt.Errorf("create live session: %w", err)
	}
	pace := "in real time"
	if !opts.realtime {
		pace = "as fast as possible"
	}
	say("\nlive session %s: streaming the recording %s…", live.ID, pace)
	if eng.Name() == engine.ScriptedName {
		say("(the scripted engine reads no sidecar in live mode: its live words are made up, their timing is real)")
	}
	err = client.StreamLive(ctx, live.URL, bytes.NewReader(wav), submitter.StreamOptions{SampleRate: 8000, Realtime: opts.realtime},
		func(m api.LiveMessage) {
			if m.Type != api.MessageTranscript || !m.TranscriptIsFinal() {
				return
			}
			var d api.TranscriptData
			if m.DecodeData(&d) == nil {
				say("  final [%6.2f–%6.2f] %s", d.Utterance.Start, d.Utterance.End, d.Utterance.Text)
			}
		})
	if err != nil {
		return fmt.Errorf("live session: %w", err)
	}
	// The live callbacks trail the socket a little; give the last ones a moment.
	hooks.waitIdle(ctx, 300*time.Millisecond)

	say("\noutputs:")
	for _, p := range written {
		say("  subtitles  %s", p)
	}
	say("  callbacks  %s (%d bodies, as received)", hooks.dir, hooks.count())
	return nil
}

// demoHooks is the demo's callback endpoint: it keeps every body on disk and hands the job
// callback to the waiting demo.
type demoHooks struct {
	dir     string
	out     io.Writer
	jobDone chan api.JobCallback

	mu   sync.Mutex
	n    int
	last time.Time
}

func (h *demoHooks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	c, err := api.ClassifyCallback(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.n++
	n := h.n
	h.last = time.Now()
	h.mu.Unlock()
	name := fmt.Sprintf("%04d-%s.json", n, strings.ReplaceAll(c.Event, ".", "_"))
	if err := os.WriteFile(filepath.Join(h.dir, name), body, 0o644); err != nil {
		http.Error(w, "store", http.StatusInternalServerError)
		return
	}
	if c.Kind == api.CallbackJobSuccess || c.Kind == api.CallbackJobError {
		var cb api.JobCallback
		if json.Unmarshal(body, &cb) == nil {
			select {
			case h.jobDone <- cb:
			default:
			}
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *demoHooks) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

func (h *demoHooks) waitIdle(ctx context.Context, quiet time.Duration) {
	for {
		h.mu.Lock()
		since := time.Since(h.last)
		h.mu.Unlock()
		if since >= quiet {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(quiet - since):
		}
	}
}

// serveLoopback serves h on a free loopback port.
func serveLoopback(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen on loopback: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
	return "http://" + ln.Addr().String(), stop, nil
}

func randomKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
