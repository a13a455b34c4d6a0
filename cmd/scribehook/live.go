package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/termtext"
	"github.com/scribehook/scribehook/sandbox/audio"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/submitter"
)

// stopGrace is how long an interrupted live command waits for post-processing after it has
// stopped the recording. The service finishes the session either way and its messages reach
// the callback; the wait only lets the last transcripts print here.
const stopGrace = 30 * time.Second

// wavPeek is how much of the input is inspected for a WAV header.
const wavPeek = 64 << 10

// liveFlags are the settings of the live command.
type liveFlags struct {
	audio, encoding, region string
	sampleRate, bitDepth    int
	channels                int
	endpointing             float64
	realtime, verbose       bool
	languages, metadata     []string
	// on and off hold --<category> and --no-<category> for each of the nine categories.
	on, off map[api.MessageCategory]*bool
}

// categoryFlag is the flag name of a category: final_transcripts → final-transcripts.
func categoryFlag(c api.MessageCategory) string { return strings.ReplaceAll(string(c), "_", "-") }

func newLiveCmd() *cobra.Command {
	lf := &liveFlags{on: map[api.MessageCategory]*bool{}, off: map[api.MessageCategory]*bool{}}
	cmd := &cobra.Command{
		Use:   "live --audio FILE|- [--sample-rate N …] [--realtime]",
		Short: "Stream audio to a live session whose callbacks come back to scribehook",
		Long: `Creates a live session with callbacks pointing back at this scribehook (a fresh token under
public_url/v1/callbacks/), records it in the local store, streams the audio over the
WebSocket, prints the final transcripts as they arrive, then stops the recording and waits
for post-processing. "scribehook serve" receives and stores the callbacks; it must run with the
same configuration and be reachable by the service at public_url.

The audio is a WAV file, whose header gives the encoding, sample rate, bit depth and channels,
or raw samples described by --encoding, --sample-rate, --bit-depth and --channels (the
service's defaults otherwise: wav/pcm, 16000 Hz, 16 bits, mono). - reads standard input, for
example a microphone: arecord -f S16_LE -r 16000 | scribehook live --audio - --realtime.
Interrupting stops the recording cleanly.

The nine category flags choose which messages the callback receives (--partial-transcripts,
--no-lifecycle-events, …); absent ones keep the service's callback defaults. If the connection
drops, the session is resumed on the same URL and the unacknowledged audio is sent again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLive(cmd, lf) },
	}
	f := cmd.Flags()
	f.StringVar(&lf.audio, "audio", "", "audio file (WAV or raw samples), - for standard input")
	f.StringVar(&lf.encoding, "encoding", "", "wav/pcm, wav/alaw or wav/ulaw (default from the WAV header, else wav/pcm)")
	f.IntVar(&lf.sampleRate, "sample-rate", 0, "samples per second (default from the WAV header, else 16000)")
	f.IntVar(&lf.bitDepth, "bit-depth", 0, "bits per sample (default from the WAV header, else 16)")
	f.IntVar(&lf.channels, "channels", 0, "channels (default from the WAV header, else 1)")
	f.BoolVar(&lf.realtime, "realtime", false, "send the audio at its own speed instead of as fast as possible")
	f.StringVar(&lf.region, "region", "", "us-west or eu-west (default: the service's choice)")
	f.Float64Var(&lf.endpointing, "endpointing", 0, "seconds of silence that end an utterance (service default 0.05)")
	f.StringSliceVar(&lf.languages, "language", nil, "spoken language codes; none means detect")
	f.StringArrayVar(&lf.metadata, "metadata", nil, "custom_metadata as key=value (repeatable)")
	f.BoolVarP(&lf.verbose, "verbose", "v", false, "log every call to the service to stderr")
	for _, c := range api.Categories {
		name := categoryFlag(c)
		lf.on[c] = f.Bool(name, false, "callback receives "+strings.ReplaceAll(string(c), "_", " ")+" (--no-"+name+" to switch off)")
		lf.off[c] = f.Bool("no-"+name, false, "callback does not receive "+strings.ReplaceAll(string(c), "_", " "))
		_ = f.MarkHidden("no-" + name)
	}
	_ = cmd.MarkFlagRequired("audio")
	cmd.AddCommand(newLiveCaptionsURLCmd())
	return cmd
}

// callbackCategories turns the category flags into the callback's messages_config; absent
// flags stay absent so that the service's defaults apply.
func (lf *liveFlags) callbackCategories(cmd *cobra.Command) (api.MessagesConfig, error) {
	var mc api.MessagesConfig
	set := cmd.Flags().Changed
	for _, c := range api.Categories {
		name := categoryFlag(c)
		var v *bool
		switch {
		case set(name) && set("no-"+name):
			return mc, fmt.Errorf("--%s and --no-%s exclude each other", name, name)
		case set(name):
			v = api.Bool(*lf.on[c])
		case set("no-" + name):
			v = api.Bool(!*lf.off[c])
		default:
			continue
		}
		if err := mc.Set(c, v); err != nil {
			return mc, err
		}
	}
	return mc, nil
}

func runLive(cmd *cobra.Command, lf *liveFlags) error {
	mc, err := lf.callbackCategories(cmd)
	if err != nil {
		return err
	}
	if err := api.ValidateRegion(lf.region); err != nil {
		return fmt.Errorf("--region: %w", err)
	}
	src, closeSrc, err := openAudio(cmd, lf.audio)
	if err != nil {
		return err
	}
	defer closeSrc()
	req, err := lf.request(cmd, src)
	if err != nil {
		return err
	}
	return withService(cmd, lf.verbose, func(ctx context.Context, cfg configs.Config, st store.Store, client *submitter.Client) error {
		req.CallbackConfig = &api.LiveCallbackConfig{MessagesConfig: mc}
		subm := &scribehook.Submitter{Store: st, Service: client, PublicURL: cfg.PublicURL}
		created, err := subm.StartLive(ctx, req, lf.region)
		if err != nil {
			return err
		}
		out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
		fmt.Fprintf(out, "live session %s\n", created.ID)

		// An interrupt ends the audio instead of the stream: stop_recording goes out and the
		// session ends properly, within stopGrace.
		streamCtx, cancelStream := context.WithCancel(context.WithoutCancel(ctx))
		defer cancelStream()
		noticed := make(chan struct{})
		stopWatch := context.AfterFunc(ctx, func() {
			defer close(noticed)
			fmt.Fprintf(errOut, "\ninterrupted: stopping the recording; waiting up to %s for post-processing\n", stopGrace)
			time.AfterFunc(stopGrace, cancelStream)
		})
		defer func() {
			// The interrupt also ends the audio, so the stream can end before the notice's
			// goroutine has written it: a command never returns with its notice unwritten.
			if !stopWatch() {
				<-noticed
			}
		}()

		sum := &liveSummary{}
		start := time.Now()
		audioSrc := newInterruptibleReader(ctx, src)
		defer audioSrc.Close()
		// The audio goes in the session's format, which the request (the flags, the WAV header)
		// set.
		err = subm.Stream(streamCtx, created, audioSrc, submitter.StreamOptions{Realtime: lf.realtime}, func(m api.LiveMessage) {
			sum.observe(out, errOut, m)
		})
		if err != nil {
			return fmt.Errorf("live session %s: %w", created.ID, err)
		}
		sum.write(out, created.ID, time.Since(start), cfg.PublicURL)
		return nil
	})
}

// request builds the live request from the flags and the WAV header, if src has one.
func (lf *liveFlags) request(cmd *cobra.Command, src *bufio.Reader) (api.LiveRequest, error) {
	var req api.LiveRequest
	set := cmd.Flags().Changed
	head, _ := src.Peek(4) // a shorter input is raw audio, or none
	if bytes.Equal(head, []byte("RIFF")) {
		format, err := peekWAVFormat(src)
		if err != nil {
			return req, fmt.Errorf("read the WAV header of %s: %w", lf.audio, err)
		}
		if format.Encoding == audio.Float {
			return req, fmt.Errorf("%s holds float samples: live sessions take wav/pcm, wav/alaw or wav/ulaw; convert it first", lf.audio)
		}
		if err := lf.matches(set, format); err != nil {
			return req, err
		}
		req.Encoding = string(format.Encoding)
		req.SampleRate = api.Int(format.SampleRate)
		req.BitDepth = api.Int(format.BitDepth)
		req.Channels = api.Int(format.Channels)
	} else {
		if set("encoding") {
			req.Encoding = lf.encoding
		}
		if set("sample-rate") {
			req.SampleRate = api.Int(lf.sampleRate)
		}
		if set("bit-depth") {
			req.BitDepth = api.Int(lf.bitDepth)
		}
		if set("channels") {
			req.Channels = api.Int(lf.channels)
		}
	}
	if set("endpointing") {
		req.Endpointing = api.Float(lf.endpointing)
	}
	if set("language") {
		req.LanguageConfig = &api.LanguageConfig{Languages: lf.languages}
	}
	md, err := metadataObject(lf.metadata)
	if err != nil {
		return req, err
	}
	req.CustomMetadata = md
	return req, nil
}

// peekWAVFormat reads the WAV header without consuming it (it is sent with the audio). It
// peeks a little at a time: on a live source (a microphone through a pipe) a large peek would
// hold the session back until that much audio exists.
func peekWAVFormat(src *bufio.Reader) (audio.Format, error) {
	for _, n := range []int{44, 512, 4096, wavPeek} {
		head, perr := src.Peek(n)
		h, err := audio.ParseHeader(head)
		if err == nil {
			return h.Format, nil
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) || perr != nil {
			return audio.Format{}, err
		}
	}
	return audio.Format{}, fmt.Errorf("no data chunk in the first %d bytes", wavPeek)
}

// matches refuses flags that contradict the WAV header: the header is sent with the audio,
// so a session created otherwise would decode noise.
func (lf *liveFlags) matches(set func(string) bool, f audio.Format) error {
	var bad []string
	if set("encoding") && lf.encoding != string(f.Encoding) {
		bad = append(bad, fmt.Sprintf("--encoding %s (the file is %s)", lf.encoding, f.Encoding))
	}
	if set("sample-rate") && lf.sampleRate != f.SampleRate {
		bad = append(bad, fmt.Sprintf("--sample-rate %d (the file is %d Hz)", lf.sampleRate, f.SampleRate))
	}
	if set("bit-depth") && lf.bitDepth != f.BitDepth {
		bad = append(bad, fmt.Sprintf("--bit-depth %d (the file is %d-bit)", lf.bitDepth, f.BitDepth))
	}
	if set("channels") && lf.channels != f.Channels {
		bad = append(bad, fmt.Sprintf("--channels %d (the file has %d)", lf.channels, f.Channels))
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s contradicts the WAV header of %s: leave the flag out", strings.Join(bad, ", "), lf.audio)
	}
	return nil
}

// openAudio opens the file, or standard input for "-".
func openAudio(cmd *cobra.Command, name string) (*bufio.Reader, func(), error) {
	if name == "-" {
		return bufio.NewReaderSize(cmd.InOrStdin(), wavPeek), func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, fmt.Errorf("open audio: %w", err)
	}
	return bufio.NewReaderSize(f, wavPeek), func() { _ = f.Close() }, nil
}

// liveSummary prints the final transcripts and the service's errors as they arrive and
// counts what the session produced.
type liveSummary struct {
	messages, finals int
	recorded         float64
	errors           int
}

func (s *liveSummary) observe(out, errOut io.Writer, m api.LiveMessage) {
	s.messages++
	switch {
	case m.Type == api.MessageError || m.HasError() || (m.Acknowledged != nil && !*m.Acknowledged):
		s.errors++
		msg := m.ErrorMessage()
		if msg == "" {
			msg = "no message"
		}
		fmt.Fprintf(errOut, "service error (%s): %s\n", termtext.Line(string(m.Type)), termtext.Line(msg))
	case m.Type == api.MessageTranscript && m.TranscriptIsFinal():
		var d api.TranscriptData
		if m.DecodeData(&d) == nil {
			s.finals++
			fmt.Fprintf(out, "[%.1f–%.1f] %s\n", d.Utterance.Start, d.Utterance.End, termtext.Line(d.Utterance.Text))
		}
	case m.Type == api.MessageStopRecording, m.Type == api.MessageEndRecording:
		var d struct {
			RecordingDuration float64 `json:"recording_duration"`
		}
		if m.DecodeData(&d) == nil && d.RecordingDuration > 0 {
			s.recorded = d.RecordingDuration
		}
	}
}

func (s *liveSummary) write(out io.Writer, id string, took time.Duration, publicURL string) {
	fmt.Fprintf(out, "session %s ended after %s: %.1fs recorded, %d final transcripts, %d messages", id, seconds(took), s.recorded, s.finals, s.messages)
	if s.errors > 0 {
		fmt.Fprintf(out, ", %d errors", s.errors)
	}
	fmt.Fprintf(out, "\ncallbacks go to scribehook serve at %s\n", publicURL)
}

// interruptibleReader ends the audio (io.EOF) when ctx ends, even while the source blocks in
// Read (a pipe, a microphone): a goroutine does the reading. That goroutine stays blocked in
// such a Read until the source yields, which only matters to a process that lives on.
type interruptibleReader struct {
	ctx  context.Context
	ch   chan readResult
	done chan struct{}
	once sync.Once
	rest []byte
	err  error
}

type readResult struct {
	p   []byte
	err error
}

func newInterruptibleReader(ctx context.Context, r io.Reader) *interruptibleReader {
	ir := &interruptibleReader{ctx: ctx, ch: make(chan readResult), done: make(chan struct{})}
	go func() {
		for {
			buf := make([]byte, 32<<10)
			n, err := r.Read(buf)
			select {
			case ir.ch <- readResult{buf[:n], err}:
			case <-ir.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ir
}

func (ir *interruptibleReader) Read(p []byte) (int, error) {
	for len(ir.rest) == 0 {
		if ir.err != nil {
			return 0, ir.err
		}
		select {
		case res := <-ir.ch:
			ir.rest, ir.err = res.p, res.err
		case <-ir.ctx.Done():
			ir.Close()
			ir.err = io.EOF
			return 0, io.EOF
		}
	}
	n := copy(p, ir.rest)
	ir.rest = ir.rest[n:]
	return n, nil
}

// Close lets the reading goroutine go once it has a result to hand over.
func (ir *interruptibleReader) Close() { ir.once.Do(func() { close(ir.done) }) }
