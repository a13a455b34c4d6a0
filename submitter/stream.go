package submitter

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
)

// Limits of the live WebSocket: the service takes frames under 1 MiB; its post-processing
// messages (a whole transcript with words) can be far larger than coder/websocket's default
// read limit of 32 KiB.
const (
	maxAudioFrame    = 1 << 20
	defaultReadLimit = 16 << 20
	// closeGrace is how long a failed send waits for the reader to report why the server
	// ended the session, which says more than the write error.
	closeGrace = 500 * time.Millisecond
)

// StreamOptions describes the audio given to StreamLive and how it is sent. Zero fields take
// the service's live defaults (16 kHz, 16 bits, mono) and 100 ms chunks; they must match the
// LiveRequest the session was created with.
type StreamOptions struct {
	SampleRate    int           // samples per second per channel; default 16000
	BitDepth      int           // bits per sample; default 16 (8 for a-law and µ-law)
	Channels      int           // default 1
	ChunkDuration time.Duration // audio per frame; default 100ms
	Realtime      bool          // pace the frames at the speed of the audio, like a microphone
	JSONChunks    bool          // send {"type":"audio_chunk","data":{"chunk":base64}} text frames
	ReadLimit     int64         // largest server message accepted; default 16 MiB
}

func (o StreamOptions) withDefaults() StreamOptions {
	if o.SampleRate <= 0 {
		o.SampleRate = api.DefaultLiveSampleRate
	}
	if o.BitDepth <= 0 {
		o.BitDepth = api.DefaultLiveBitDepth
	}
	if o.Channels <= 0 {
		o.Channels = api.DefaultLiveChannels
	}
	if o.ChunkDuration <= 0 {
		o.ChunkDuration = 100 * time.Millisecond
	}
	if o.ReadLimit <= 0 {
		o.ReadLimit = defaultReadLimit
	}
	return o
}

// frameBytes is the size of one sample of every channel.
func (o StreamOptions) frameBytes() int { return (o.BitDepth + 7) / 8 * o.Channels }

// bytesPerSecond is the data rate of the audio.
func (o StreamOptions) bytesPerSecond() int { return o.SampleRate * o.frameBytes() }

// ChunkSize is the number of audio bytes per frame: ChunkDuration of audio, rounded down to
// whole sample frames (3200 bytes for 100 ms of 16 kHz 16-bit mono).
func (o StreamOptions) ChunkSize() int {
	o = o.withDefaults()
	n := int(int64(o.bytesPerSecond()) * int64(o.ChunkDuration) / int64(time.Second))
	n -= n % o.frameBytes()
	return max(n, o.frameBytes())
}

// StreamLive sends audio to a live session and hands each server message to onMessage, in
// the order received and from one goroutine. wsURL is the url of CreateLive's answer; its
// token authenticates the socket, so the API key is not sent. After the audio it sends
// stop_recording and keeps reading until the server closes: nil when it closes with 1000
// (post-processing done), an error otherwise. onMessage may be nil; StreamLive does not
// return before its last call has returned.
//
// audio is read in the calling goroutine; a reader that blocks (a pipe, a microphone) delays
// the return after ctx ends until its Read returns.
func (c *Client) StreamLive(ctx context.Context, wsURL string, audio io.Reader, opts StreamOptions, onMessage func(api.LiveMessage)) error {
	opts = opts.withDefaults()
	chunk := opts.ChunkSize()
	frame := chunk
	if opts.JSONChunks {
		frame = base64.StdEncoding.EncodedLen(chunk) + 64
	}
	if frame >= maxAudioFrame {
		return fmt.Errorf("audio frame of %d bytes is over the 1 MiB limit: shorten ChunkDuration", frame)
	}
	u, err := url.Parse(wsURL)
	if err != nil {
		return errors.New("parse live session url") // the url error would print the token
	}
	log := c.log.WithField("host", u.Host)

	conn, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{
		HTTPClient: c.hc,
		HTTPHeader: http.Header{"User-Agent": {c.userAgent}},
	})
	if err != nil {
		return fmt.Errorf("dial live session: %w", redactQuery(err, u))
	}
	defer conn.CloseNow()
	conn.SetReadLimit(opts.ReadLimit)
	log.Debug("live session connected")

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	readDone := make(chan error, 1)
	go func() {
		readDone <- c.readLive(sctx, conn, log, onMessage)
		// Nothing more is worth sending once the server has finished or failed.
		cancel()
	}()

	sent, sendErr := c.sendAudio(sctx, conn, audio, opts, chunk)
	if sendErr == nil {
		return <-readDone
	}
	var ae *audioError
	if errors.As(sendErr, &ae) {
		cancel()
		<-readDone
		return sendErr
	}
	// The send failed on the socket or because the reader stopped: the reader knows best why.
	select {
	case readErr := <-readDone:
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case readErr == nil:
			return fmt.Errorf("server closed the live session after %d bytes of audio, before stop_recording", sent)
		}
		return readErr
	case <-time.After(closeGrace):
		cancel()
		<-readDone
		return sendErr
	}
}

// audioError is a failure to read the caller's audio, as opposed to a failure of the socket.
type audioError struct{ err error }

func (e *audioError) Error() string { return "read audio: " + e.err.Error() }
func (e *audioError) Unwrap() error { return e.err }

// sendAudio writes the audio in chunks, then stop_recording. It returns the audio bytes sent.
func (c *Client) sendAudio(ctx context.Context, conn *websocket.Conn, audio io.Reader, opts StreamOptions, chunk int) (int64, error) {
	buf := make([]byte, chunk)
	var sent int64
	start := c.now()
	for {
		n, rerr := io.ReadFull(audio, buf)
		if n > 0 {
			if opts.Realtime && sent > 0 {
				due := start.Add(time.Duration(sent * int64(time.Second) / int64(opts.bytesPerSecond())))
				if err := c.sleep(ctx, due.Sub(c.now())); err != nil {
					return sent, err
				}
			}
			if err := writeChunk(ctx, conn, buf[:n], opts.JSONChunks); err != nil {
				return sent, err
			}
			sent += int64(n)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return sent, &audioError{err: rerr}
		}
	}
	stop, _ := json.Marshal(api.ClientMessage{Type: api.ClientStopRecording})
	if err := conn.Write(ctx, websocket.MessageText, stop); err != nil {
		return sent, fmt.Errorf("send stop_recording: %w", err)
	}
	return sent, nil
}

func writeChunk(ctx context.Context, conn *websocket.Conn, p []byte, asJSON bool) error {
	if !asJSON {
		if err := conn.Write(ctx, websocket.MessageBinary, p); err != nil {
			return fmt.Errorf("send audio: %w", err)
		}
		return nil
	}
	var m api.AudioChunkMessage
	m.Type = api.ClientAudioChunk
	m.Data.Chunk = p
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode audio_chunk: %w", err)
	}
	if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("send audio: %w", err)
	}
	return nil
}

// readLive reads server messages until the connection ends. A text frame that is not a JSON
// object is logged and skipped rather than ending a session whose audio is still flowing.
func (c *Client) readLive(ctx context.Context, conn *websocket.Conn, log *logrus.Entry, onMessage func(api.LiveMessage)) error {
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) == websocket.StatusNormalClosure {
				log.Debug("live session closed by the server")
				return nil
			}
			return fmt.Errorf("read live message: %w", err)
		}
		if typ != websocket.MessageText {
			log.WithField("bytes", len(data)).Warn("skipping binary live message")
			continue
		}
		var m api.LiveMessage
		if err := json.Unmarshal(data, &m); err != nil {
			log.WithError(err).Warn("skipping undecodable live message")
			continue
		}
		if onMessage != nil {
			onMessage(m)
		}
	}
}

// redactQuery hides the query values of u (the session token) in err's text, keeping err
// for errors.Is and errors.As.
func redactQuery(err error, u *url.URL) error {
	msg := err.Error()
	for _, vs := range u.Query() {
		for _, v := range vs {
			if len(v) >= 4 {
				msg = strings.ReplaceAll(msg, v, "REDACTED")
				msg = strings.ReplaceAll(msg, url.QueryEscape(v), "REDACTED")
			}
		}
	}
	return &redactedError{msg: msg, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
