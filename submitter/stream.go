package submitter

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
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
// LiveRequest the session was created with. The root package's Submitter.Stream fills
// SampleRate, BitDepth and Channels from the session StartLive created.
type StreamOptions struct {
	SampleRate    int           // samples per second per channel; default 16000
	BitDepth      int           // bits per sample; default 16 (8 for a-law and µ-law)
	Channels      int           // default 1
	ChunkDuration time.Duration // audio per frame; default 100ms
	Realtime      bool          // pace the frames at the speed of the audio, like a microphone
	JSONChunks    bool          // send {"type":"audio_chunk","data":{"chunk":base64}} text frames
	ReadLimit     int64         // largest server message accepted; default 16 MiB
	// Reconnects bounds the consecutive attempts to reconnect after the connection drops
	// without a close frame (the service resumes a session on its URL); default 5, negative
	// disables resuming. An attempt that gets audio acknowledged resets the count.
	Reconnects int
	// ResumeBuffer bounds the audio kept for resending after a drop: the bytes sent but not
	// yet acknowledged (default 16 MiB). When acknowledgments fall further behind, the oldest
	// bytes are let go and a later drop ends the stream with an error instead of resuming.
	ResumeBuffer int
}

// Defaults of resuming.
const (
	defaultReconnects   = 5
	defaultResumeBuffer = 16 << 20
	reconnectBaseDelay  = 250 * time.Millisecond
	reconnectMaxDelay   = 5 * time.Second
	// noAckWindow is how long audio may flow without any acknowledgment before a drop is
	// judged unresumable.
	noAckWindow = 5 * time.Second
)

func (o StreamOptions) withDefaults() StreamOptions {
	o.SampleRate = positiveOr(o.SampleRate, api.DefaultLiveSampleRate)
	o.BitDepth = positiveOr(o.BitDepth, api.DefaultLiveBitDepth)
	o.Channels = positiveOr(o.Channels, api.DefaultLiveChannels)
	o.ChunkDuration = positiveOr(o.ChunkDuration, 100*time.Millisecond)
	o.ReadLimit = positiveOr(o.ReadLimit, defaultReadLimit)
	o.ResumeBuffer = positiveOr(o.ResumeBuffer, defaultResumeBuffer)
	if o.Reconnects == 0 { // negative disables resuming, so only zero takes the default
		o.Reconnects = defaultReconnects
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
// the order received, one call at a time. wsURL is the url of CreateLive's answer; its token
// authenticates the socket, so the API key is not sent. After the audio it sends
// stop_recording and keeps reading until the server closes: nil when it closes with 1000
// (post-processing done), an error otherwise. onMessage may be nil; StreamLive does not
// return before its last call has returned.
//
// When the connection drops without a close frame, StreamLive reconnects to the same URL with
// back-off (the service resumes the session) and resends the audio from the end of the last
// audio_chunk acknowledgment (data.byte_range), so that a source that cannot rewind (stdin, a
// microphone) loses nothing. Bytes the server received but whose acknowledgment was lost with
// the connection are sent twice: the protocol gives no other position to resume from. A
// session whose messages_config switches acknowledgments off cannot resume once it has sent
// for a few seconds. A close frame (any code) is never resumed: the server meant it.
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
	s := &liveStream{
		c: c, wsURL: wsURL, u: u, opts: opts, chunk: chunk, audio: audio, onMessage: onMessage,
		log: c.log.WithField("host", u.Host),
	}
	conn, _, err := s.dial(ctx)
	if err != nil {
		return fmt.Errorf("dial live session: %w", err)
	}
	s.log.Debug("live session connected")
	failures := 0
	for {
		ackedBefore := s.ackedUpTo()
		dropped, err := s.session(ctx, conn)
		if !dropped || opts.Reconnects < 0 {
			return err
		}
		if s.ackedUpTo() > ackedBefore {
			failures = 0 // the connection made progress: count the attempts afresh
		}
		if rerr := s.resumable(); rerr != nil {
			return fmt.Errorf("%w; the connection dropped: %w", rerr, err)
		}
		if conn, err = s.reconnect(ctx, err, &failures); err != nil {
			return err
		}
	}
}

// liveStream is one StreamLive call: the audio position and the bytes kept for resending.
type liveStream struct {
	c         *Client
	wsURL     string
	u         *url.URL
	opts      StreamOptions
	chunk     int
	audio     io.Reader
	onMessage func(api.LiveMessage)
	log       *logrus.Entry

	// Only the sending goroutine (the caller's) uses these.
	read    int64     // bytes taken from audio: the offset of the next new byte
	eof     bool      // audio is exhausted
	started bool      // the first chunk was sent: start is set
	start   time.Time // when the first chunk was sent, for realtime pacing

	// The reader goroutine advances acked; mu guards the resend buffer. pending holds the
	// bytes [pendingStart, read): taken from audio and not yet acknowledged.
	mu           sync.Mutex
	acked        int64
	sawAck       bool
	pending      []byte
	pendingStart int64
}

func (s *liveStream) dial(ctx context.Context) (*websocket.Conn, *http.Response, error) {
	conn, resp, err := websocket.Dial(ctx, s.wsURL, &websocket.DialOptions{
		HTTPClient: s.c.hc,
		HTTPHeader: http.Header{"User-Agent": {s.c.userAgent}},
	})
	if err != nil {
		return nil, resp, redactQuery(err, s.u)
	}
	conn.SetReadLimit(s.opts.ReadLimit)
	return conn, resp, nil
}

// reconnect dials again with exponential back-off until it succeeds, the server refuses the
// session for good (its token spent, the session ended), or the attempts run out.
func (s *liveStream) reconnect(ctx context.Context, cause error, failures *int) (*websocket.Conn, error) {
	for {
		if *failures >= s.opts.Reconnects {
			return nil, fmt.Errorf("live connection dropped and %d reconnection attempts failed: %w", s.opts.Reconnects, cause)
		}
		*failures++
		delay := RetryPolicy{BaseDelay: reconnectBaseDelay, MaxDelay: reconnectMaxDelay}.backoffCeiling(*failures)
		delay = delay/2 + s.c.jitter(delay/2)
		s.log.WithFields(logrus.Fields{"attempt": *failures, "delay": delay, "acked_bytes": s.ackedUpTo()}).
			WithError(cause).Warn("live connection dropped; reconnecting")
		if err := s.c.sleep(ctx, delay); err != nil {
			return nil, err
		}
		conn, resp, err := s.dial(ctx)
		if err == nil {
			s.log.WithField("attempt", *failures).Info("live session resumed")
			return conn, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if resp != nil && refusedForGood(resp.StatusCode) {
			return nil, fmt.Errorf("resume live session: the server refused the reconnection with status %d (the session may have ended; its messages still reach the callback): %w", resp.StatusCode, err)
		}
		cause = err
	}
}

// refusedForGood tells the answers to a reconnection that another attempt cannot change; 409
// (the server has not noticed the drop yet), 429 and 5xx are worth retrying.
func refusedForGood(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusGone:
		return true
	}
	return false
}

// resumable says whether the server's position is known and the bytes after it are still
// kept.
func (s *liveStream) resumable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pendingStart > s.acked {
		return fmt.Errorf("cannot resume the live session: audio from byte %d was never acknowledged and is no longer buffered (ResumeBuffer is %d bytes)",
			s.acked, s.opts.ResumeBuffer)
	}
	// Acknowledgments come back within milliseconds; none after seconds of sending means the
	// session switched them off, and the server's position is unknown. A drop before the
	// first acknowledgment could arrive resends from the start.
	if !s.sawAck && s.read > int64(s.opts.bytesPerSecond()) && s.c.now().Sub(s.start) > noAckWindow {
		return errors.New("cannot resume the live session: the server acknowledged no audio, so the position to resume from is unknown (are acknowledgments switched off in messages_config?)")
	}
	return nil
}

func (s *liveStream) ackedUpTo() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acked
}

// onAck records an acknowledgment's end and lets go of the bytes it covers.
func (s *liveStream) onAck(end int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sawAck = true
	if end > s.acked {
		s.acked = end
	}
	s.trimLocked()
}

// keep adds bytes taken from audio to the resend buffer, letting go of the oldest beyond
// ResumeBuffer.
func (s *liveStream) keep(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, p...)
	s.read += int64(len(p))
	s.trimLocked()
	if over := len(s.pending) - s.opts.ResumeBuffer; over > 0 {
		s.pending = s.pending[over:]
		s.pendingStart += int64(over)
	}
}

func (s *liveStream) trimLocked() {
	if n := s.acked - s.pendingStart; n > 0 {
		n = min(n, int64(len(s.pending)))
		s.pending = s.pending[n:]
		s.pendingStart += n
	}
	if len(s.pending) == 0 {
		s.pending = nil // let the array go; the next append starts a small one
	}
}

// session runs one connection until the server closes it, it drops or the audio fails;
// dropped reports a connection lost without a close frame, which a reconnection may resume.
func (s *liveStream) session(ctx context.Context, conn *websocket.Conn) (dropped bool, err error) {
	defer conn.CloseNow()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	readDone := make(chan error, 1)
	go func() {
		readDone <- s.readLive(sctx, conn)
		// Nothing more is worth sending once the server has finished or failed.
		cancel()
	}()

	sendErr := s.send(sctx, conn)
	if sendErr == nil {
		return s.classify(ctx, <-readDone)
	}
	var ae *audioError
	if errors.As(sendErr, &ae) {
		cancel()
		<-readDone
		return false, sendErr
	}
	// The send failed on the socket or because the reader stopped: the reader knows best why.
	select {
	case readErr := <-readDone:
		switch {
		case ctx.Err() != nil:
			return false, ctx.Err()
		case readErr == nil:
			return false, fmt.Errorf("server closed the live session after %d bytes of audio, before stop_recording", s.read)
		}
		return s.classify(ctx, readErr)
	case <-time.After(closeGrace):
		cancel()
		<-readDone
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		// The socket failed under the writer and no close frame came: the connection is gone.
		return true, sendErr
	}
}

func (s *liveStream) classify(ctx context.Context, readErr error) (bool, error) {
	switch {
	case readErr == nil:
		return false, nil
	case ctx.Err() != nil:
		return false, ctx.Err()
	case isDrop(readErr):
		return true, readErr
	}
	return false, readErr
}

// isDrop reports a connection lost without a close frame: end of stream or a network error.
func isDrop(err error) bool {
	if websocket.CloseStatus(err) != -1 {
		return false
	}
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, net.ErrClosed) || errors.As(err, &ne)
}

// audioError is a failure to read the caller's audio, as opposed to a failure of the socket.
type audioError struct{ err error }

func (e *audioError) Error() string { return "read audio: " + e.err.Error() }
func (e *audioError) Unwrap() error { return e.err }

// send resends the audio the server has not acknowledged, then the rest of the audio in
// chunks, then stop_recording.
func (s *liveStream) send(ctx context.Context, conn *websocket.Conn) error {
	s.mu.Lock()
	resend := slices.Clone(s.pending)
	s.mu.Unlock()
	for len(resend) > 0 {
		n := min(s.chunk, len(resend))
		if err := writeChunk(ctx, conn, resend[:n], s.opts.JSONChunks); err != nil {
			return err
		}
		resend = resend[n:]
	}
	buf := make([]byte, s.chunk)
	for !s.eof {
		n, rerr := io.ReadFull(s.audio, buf)
		if n > 0 {
			offset := s.read
			// Kept before anything can fail, so that a drop from here on resends it.
			s.keep(buf[:n])
			if !s.started {
				s.started, s.start = true, s.c.now()
			}
			if s.opts.Realtime && offset > 0 {
				due := s.start.Add(time.Duration(offset * int64(time.Second) / int64(s.opts.bytesPerSecond())))
				if err := s.c.sleep(ctx, due.Sub(s.c.now())); err != nil {
					return err
				}
			}
			if err := writeChunk(ctx, conn, buf[:n], s.opts.JSONChunks); err != nil {
				return err
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			s.eof = true
			break
		}
		if rerr != nil {
			return &audioError{err: rerr}
		}
	}
	stop, _ := json.Marshal(api.ClientMessage{Type: api.ClientStopRecording})
	if err := conn.Write(ctx, websocket.MessageText, stop); err != nil {
		return fmt.Errorf("send stop_recording: %w", err)
	}
	return nil
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

// readLive reads server messages until the connection ends, noting acknowledgments for
// resuming. A text frame that is not a JSON object is logged and skipped rather than ending a
// session whose audio is still flowing.
func (s *liveStream) readLive(ctx context.Context, conn *websocket.Conn) error {
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) == websocket.StatusNormalClosure {
				s.log.Debug("live session closed by the server")
				return nil
			}
			return fmt.Errorf("read live message: %w", err)
		}
		if typ != websocket.MessageText {
			s.log.WithField("bytes", len(data)).Warn("skipping binary live message")
			continue
		}
		var m api.LiveMessage
		if err := json.Unmarshal(data, &m); err != nil {
			s.log.WithError(err).Warn("skipping undecodable live message")
			continue
		}
		if m.Type == api.MessageAudioChunk && (m.Acknowledged == nil || *m.Acknowledged) {
			var d api.AudioChunkAckData
			if m.DecodeData(&d) == nil {
				s.onAck(d.ByteRange[1])
			}
		}
		if s.onMessage != nil {
			s.onMessage(m)
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
