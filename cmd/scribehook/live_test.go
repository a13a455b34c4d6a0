package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/sandbox/audio"
	"github.com/scribehook/scribehook/store"
)

// sampleWAV writes the demo recording (16 kHz, 16-bit, mono, 12.4 s) to a file.
func sampleWAV(t *testing.T) (string, []byte) {
	t.Helper()
	wav, _ := demodata.ReadFile("demodata/sample.wav")
	p := filepath.Join(t.TempDir(), "sample.wav")
	writeFile(t, p, wav)
	return p, wav
}

var (
	finalLine   = regexp.MustCompile(`^\[\d+\.\d–\d+\.\d\] \S`)
	summaryLine = regexp.MustCompile(`^session (\S+) ended after \d+\.\ds: (\d+\.\d)s recorded, (\d+) final transcripts, \d+ messages$`)
)

// liveOutput checks the shape of live's stdout and returns the session id, the recorded
// seconds and the number of final transcripts printed.
func liveOutput(t *testing.T, out string) (string, float64, int) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	id, ok := strings.CutPrefix(lines[0], "live session ")
	if !ok || len(lines) < 4 {
		t.Fatalf("stdout =\n%s", out)
	}
	finals := lines[1 : len(lines)-2]
	for _, l := range finals {
		if !finalLine.MatchString(l) {
			t.Fatalf("not a final transcript line: %q\n%s", l, out)
		}
	}
	m := summaryLine.FindStringSubmatch(lines[len(lines)-2])
	if m == nil || m[1] != id || m[3] != strconv.Itoa(len(finals)) || lines[len(lines)-1] != "callbacks go to scribehook serve at "+publicURLOf(out) {
		t.Fatalf("summary of\n%s", out)
	}
	recorded, _ := strconv.ParseFloat(m[2], 64)
	return id, recorded, len(finals)
}

func publicURLOf(out string) string {
	_, after, _ := strings.Cut(out, "callbacks go to scribehook serve at ")
	return strings.TrimSpace(after)
}

// waitLiveDone waits (on the sandbox, in the test only) until the session's post-processing
// and callbacks are over.
func (e *cliEnv) waitLiveDone(id string) api.Job {
	e.t.Helper()
	var job api.Job
	testwait.For(e.t, "session "+id+" to end", 20*time.Second, func() bool {
		var err error
		if job, err = e.client.GetLive(context.Background(), id); err != nil {
			e.t.Fatal(err)
		}
		return job.Status.Final()
	})
	time.Sleep(200 * time.Millisecond) // the last callbacks trail the record
	return job
}

func TestLiveStreamsAWAVFileWithCallbacksBack(t *testing.T) {
	e := newCLIEnv(t, nil)
	e.serve.store = false
	path, _ := sampleWAV(t)
	out, errOut, err := e.run(nil, "live", "--audio", path, "--partial-transcripts", "--no-lifecycle-events",
		"--speech-events=false", "--endpointing", "0.3", "--metadata", "src=test")
	if err != nil {
		t.Fatalf("live: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	id, recorded, finals := liveOutput(t, out)
	if recorded < 12.3 || recorded > 12.4 || finals == 0 {
		t.Fatalf("recorded %v s, %d finals:\n%s", recorded, finals, out)
	}
	if errOut != "" {
		t.Fatalf("stderr = %s", errOut)
	}

	job := e.waitLiveDone(id)
	params, err := job.LiveParams()
	if err != nil {
		t.Fatal(err)
	}
	// The WAV header gave the format; the flags gave the callback's categories.
	if *params.SampleRate != 16000 || *params.BitDepth != 16 || *params.Channels != 1 || params.Encoding != "wav/pcm" || *params.Endpointing != 0.3 {
		t.Fatalf("audio params = %+v", params)
	}
	mc := params.CallbackConfig.MessagesConfig
	if !api.IsTrue(params.Callback) || !api.IsTrue(mc.ReceivePartialTranscripts) || mc.ReceiveLifecycleEvents == nil ||
		*mc.ReceiveLifecycleEvents || mc.ReceiveSpeechEvents == nil || *mc.ReceiveSpeechEvents || mc.ReceiveFinalTranscripts != nil {
		t.Fatalf("callback config = %+v", mc)
	}
	events := map[string]int{}
	partials := 0
	for _, cb := range e.serve.callbacks() {
		// The record read back says where callbacks go, with the token redacted.
		if cb.JobID != id || params.CallbackConfig.URL != e.serve.URL+"/v1/callbacks/[token]" {
			t.Fatalf("callback for %s with token bound to %s", id, cb.JobID)
		}
		var lc api.LiveCallback
		if err := json.Unmarshal(cb.Body, &lc); err != nil {
			t.Fatal(err)
		}
		events[lc.Event]++
		if lc.Payload.Type == api.MessageTranscript && !lc.Payload.TranscriptIsFinal() {
			partials++
		}
	}
	if events["live.start_session"] != 0 || events["live.end_session"] != 0 || events["live.speech_start"] != 0 ||
		events["live.transcript"] < finals || events["live.post_final_transcript"] != 1 {
		t.Fatalf("callback events = %v", events)
	}
	t.Logf("callbacks: %v (%d partials)", events, partials)

	rec, err := e.openStore().GetJob(context.Background(), id)
	if err != nil || rec.Job.Kind != api.KindLive || rec.Local.Source != scribehook.SourceSubmit || string(rec.Job.CustomMetadata) != `{"src":"test"}` {
		t.Fatalf("record = %+v, %v", rec, err)
	}
	tok, err := e.openStore().LookupToken(context.Background(), store.HashToken(e.serve.callbacks()[0].Token))
	if err != nil || tok.Kind != api.KindLive || tok.JobID != id {
		t.Fatalf("token = %+v, %v", tok, err)
	}
}

func TestLiveReadsRawPCMFromStdin(t *testing.T) {
	e := newCLIEnv(t, nil)
	e.serve.store = false
	_, wav := sampleWAV(t)
	h, err := audio.ParseHeader(wav)
	if err != nil {
		t.Fatal(err)
	}
	pcm := wav[h.DataOffset:]
	out, errOut, err := e.run(bytes.NewReader(pcm), "live", "--audio", "-", "--sample-rate", "16000", "--encoding", "wav/pcm")
	if err != nil {
		t.Fatalf("live: %v\n%s", err, errOut)
	}
	id, recorded, _ := liveOutput(t, out)
	if recorded < 12.3 || recorded > 12.4 {
		t.Fatalf("recorded %v", recorded)
	}
	job := e.waitLiveDone(id)
	params, _ := job.LiveParams()
	if *params.SampleRate != 16000 || params.Encoding != "wav/pcm" || params.BitDepth != nil && *params.BitDepth != 16 {
		t.Fatalf("params = %+v", params)
	}
}

func TestLiveRefusesFlagsThatContradictTheWAVHeader(t *testing.T) {
	e := newCLIEnv(t, nil)
	path, _ := sampleWAV(t)
	_, _, err := e.run(nil, "live", "--audio", path, "--sample-rate", "8000", "--channels", "1")
	if err == nil || err.Error() != "--sample-rate 8000 (the file is 16000 Hz) contradicts the WAV header of "+path+": leave the flag out" {
		t.Fatalf("err = %v", err)
	}
	_, _, err = e.run(nil, "live", "--audio", path, "--final-transcripts", "--no-final-transcripts")
	if err == nil || err.Error() != "--final-transcripts and --no-final-transcripts exclude each other" {
		t.Fatalf("err = %v", err)
	}
	_, _, err = e.run(nil, "live", "--audio", path, "--region", "mars")
	if err == nil || !strings.HasPrefix(err.Error(), "--region: ") {
		t.Fatalf("err = %v", err)
	}
}

// cutProxy forwards TCP to target and, once, cuts the first live WebSocket connection (no
// close frame) after cutAfter bytes of it have gone from the client to the server: a network
// drop in the middle of the audio.
type cutProxy struct {
	ln       net.Listener
	target   string
	cutAfter int
	cut      atomic.Bool // claimed by the one connection that is cut
}

func newCutProxy(t *testing.T, target string, cutAfter int) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, cutAfter: cutAfter}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.handle(c)
		}
	}()
	return p
}

func (p *cutProxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *cutProxy) handle(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	go func() {
		_, _ = io.Copy(c, s)
		c.Close()
	}()
	defer s.Close()
	buf := make([]byte, 4096)
	var tail []byte
	live, after := false, 0
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if !live {
				tail = append(tail, buf[:n]...)
				live = bytes.Contains(tail, []byte("GET /v2/live?token="))
				tail = tail[max(0, len(tail)-64):]
			} else {
				after += n
			}
			if live && after > p.cutAfter && p.cut.CompareAndSwap(false, true) {
				c.Close() // the chunk in hand is lost with the connection
				return
			}
			if _, err := s.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func TestLiveResumesThroughADroppedConnection(t *testing.T) {
	e := newCLIEnv(t, nil)
	e.serve.store = false
	proxy := newCutProxy(t, strings.TrimPrefix(e.sandbox.URL, "http://"), 32000) // 1 s of audio
	e.writeConfig(e.serve.URL, proxy.URL())
	path, _ := sampleWAV(t)
	out, errOut, err := e.run(nil, "live", "--audio", path)
	if err != nil {
		t.Fatalf("live: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if !proxy.cut.Load() || !strings.Contains(errOut, "live connection dropped; reconnecting") {
		t.Fatalf("no drop seen: cut %v, stderr:\n%s", proxy.cut.Load(), errOut)
	}
	id, recorded, finals := liveOutput(t, out)
	// Audio the sandbox received but whose acknowledgment was lost with the connection is
	// sent twice (the protocol gives no other position to resume from): at most what went
	// through the first connection: 1 s and one read of the proxy.
	if recorded < 12.3 || recorded > 13.7 || finals == 0 {
		t.Fatalf("recorded %v s, %d finals", recorded, finals)
	}
	t.Logf("recorded %.1f s of 12.4 s", recorded)
	job := e.waitLiveDone(id)
	if job.Status != api.StatusDone {
		t.Fatalf("session %s", job.Status)
	}
	starts := 0
	for _, m := range apitest.MustResult(&job).Messages {
		if strings.Contains(m, `"type":"start_session"`) {
			starts++
		}
	}
	if starts != 1 {
		t.Fatalf("start_session ×%d: the reconnection started a new session", starts)
	}
}

// An interrupt ends the audio, not the session: stop_recording goes out and the session ends
// with its post-processing.
func TestLiveInterruptStopsTheRecordingCleanly(t *testing.T) {
	e := newCLIEnv(t, nil)
	e.serve.store = false
	_, wav := sampleWAV(t)
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() { _, _ = pw.Write(wav[:len(wav)/3]) }() // then the source blocks, like a microphone
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut sandboxtest.Buffer
	done := startCmd(ctx, pr, &out, &errOut, "--config", e.cfgPath, "live", "--audio", "-")
	waitForOutput(t, &out, "live session ")
	time.Sleep(500 * time.Millisecond)
	cancel()
	if err := waitEnded(t, done, 20*time.Second); err != nil {
		t.Fatalf("live: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "interrupted: stopping the recording") {
		t.Fatalf("stderr = %s", errOut.String())
	}
	_, recorded, _ := liveOutput(t, out.String())
	if recorded < 3.6 || recorded > 4.6 {
		t.Fatalf("recorded %v s of a third of 12.4 s", recorded)
	}
}

// waitForOutput waits until a command running in another goroutine has written want.
func waitForOutput(t *testing.T, b *sandboxtest.Buffer, want string) {
	t.Helper()
	testwait.For(t, fmt.Sprintf("the output to hold %q", want), 10*time.Second, func() bool {
		return strings.Contains(b.String(), want)
	})
}
