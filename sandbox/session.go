package sandbox

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/sandbox/audio"
	"github.com/scribehook/scribehook/sandbox/engine"
	"github.com/scribehook/scribehook/sandbox/internal/addons"
)

// maxFrameBytes is the largest audio chunk a client may send (provider-facts.md: frames under
// 1 MiB).
const maxFrameBytes = 1 << 20

// sessionState is where a live session is in its life.
type sessionState int

const (
	stateCreated   sessionState = iota // created over HTTP, no socket yet
	stateStreaming                     // a socket is attached
	stateDetached                      // the socket dropped without stop; a reconnect resumes
	stateEnded                         // post-processing done; the token is spent
)

// session is one live session: its settings, the audio decoder and engine stream, and every
// message it produced. All its work happens on the goroutine of the attached socket, or on the
// idle timer's goroutine once detached; mu serialises the two.
type session struct {
	srv    *Server
	id     string
	token  string
	region string
	req    *api.LiveRequest
	log    *logrus.Entry

	settings    api.LiveSettings
	endpointing float64
	maxUtter    float64
	threshold   float64
	wsCats      api.CategorySet
	cbCats      api.CategorySet
	callbackURL string

	mu          sync.Mutex
	state       sessionState
	conn        *websocket.Conn
	started     bool
	bytesIn     int64 // every byte received, a WAV header included
	decoder     *audio.StreamDecoder
	resamplers  []*audio.Resampler // one a channel, to the engine's 16 kHz
	speller     *addons.Speller
	stream      engine.Stream
	messages    []string
	finals      []api.Utterance
	idle        *time.Timer
	done        chan struct{}
	abortOnce   sync.Once
	stopAsked   bool
	uttCounters map[string]bool
	// tail and align make a resumed socket count each byte once (resume.go).
	tail  resumeTail
	align *aligner
	// The recording of what the client streamed, for GET /v2/live/{id}/file: rec is open while
	// the session streams, recPath stays until the session is deleted.
	rec      *os.File
	recPath  string
	recBytes int64
	recErr   error
}

func newSession(srv *Server, id, token, region string, req *api.LiveRequest) *session {
	eff := req.Settings()
	sess := &session{
		srv: srv, id: id, token: token, region: region, req: req,
		log:         srv.log.WithField("session_id", id),
		settings:    eff,
		endpointing: eff.Endpointing,
		maxUtter:    eff.MaximumDurationWithoutEndpointing,
		threshold:   eff.SpeechThreshold,
		wsCats:      req.MessagesConfig.WebSocketCategories(),
		cbCats:      req.CallbackConfig.CallbackCategories(),
		done:        make(chan struct{}),
		tail:        newResumeTail(),
	}
	if rp := req.RealtimeProcessing; rp != nil && api.IsTrue(rp.CustomSpelling) {
		sess.speller = addons.NewSpeller(rp.CustomSpellingConfig)
	}
	if api.IsTrue(req.Callback) && req.CallbackConfig != nil {
		sess.callbackURL = req.CallbackConfig.URL
	}
	return sess
}

// handleLiveSocket authenticates the socket by its token alone and runs the session on it.
func (s *Server) handleLiveSocket(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.sessions.token(r.URL.Query().Get("token"))
	if !ok {
		s.writeError(w, r, http.StatusUnauthorized, "invalid or expired session token", nil)
		return
	}
	if status, msg := sess.admit(); status != 0 {
		s.writeError(w, r, status, msg, nil)
		return
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		sess.release()
		return
	}
	// Base64 audio_chunk messages carry up to 1 MiB of audio in about 1.4 MiB of text.
	conn.SetReadLimit(2 * maxFrameBytes)
	sess.run(r.Context(), conn)
}

// admit reserves the session for one socket; a token whose session ended is spent, and a
// session takes one socket at a time.
func (sess *session) admit() (int, string) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	switch sess.state {
	case stateEnded:
		return http.StatusUnauthorized, "session token already used: the session has ended"
	case stateStreaming:
		return http.StatusConflict, "session already has a connected socket"
	}
	sess.state = stateStreaming
	if sess.idle != nil {
		sess.idle.Stop()
	}
	return 0, ""
}

func (sess *session) release() {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.state == stateStreaming {
		sess.state = stateDetached
	}
}

func (sess *session) run(ctx context.Context, conn *websocket.Conn) {
	sess.mu.Lock()
	sess.conn = conn
	if sess.started {
		sess.align = newAligner(&sess.tail) // a resume: the client resends what it saw no ack for
	} else {
		sess.started = true
		if err := sess.startLocked(); err != nil {
			sess.mu.Unlock()
			_ = conn.Close(websocket.StatusInternalError, "engine unavailable")
			return
		}
	}
	sess.mu.Unlock()

	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			sess.mu.Lock()
			sess.conn = nil
			if clientEnded(err) && sess.state != stateEnded {
				// The client ended the recording, like stop_recording; post-processing still
				// runs, its messages reach the callback and the job record.
				sess.finishLocked()
			} else if sess.state == stateStreaming {
				// Frames held for alignment were not acknowledged: the client sends them again.
				sess.align = nil
				sess.state = stateDetached
				sess.armIdleLocked()
			}
			sess.mu.Unlock()
			return
		}
		sess.mu.Lock()
		if sess.state == stateEnded {
			sess.mu.Unlock()
			return
		}
		stop, limit := sess.handleFrameLocked(typ, data)
		if stop || limit {
			sess.stopAsked = stop
			sess.finishLocked()
			sess.mu.Unlock()
			_ = conn.Close(websocket.StatusNormalClosure, "session ended")
			return
		}
		sess.mu.Unlock()
	}
}

// clientEnded reports whether a read error is the client closing the socket on purpose: 1000,
// or 1001 (going away), which the official SDKs send from end_session, after stop_recording or
// without it, and never follow with a reconnection. Anything else (no close frame, 1006, other
// codes) is a dropped connection that the client may resume. docs/spec/sdk-notes.md.
func clientEnded(err error) bool {
	switch websocket.CloseStatus(err) {
	case websocket.StatusNormalClosure, websocket.StatusGoingAway:
		return true
	}
	return false
}

func (sess *session) startLocked() error {
	set := sess.settings
	decoder, err := audio.NewStreamDecoder(audio.Encoding(set.Encoding), set.BitDepth, set.SampleRate, set.Channels)
	if err != nil {
		return err
	}
	sess.resamplers = make([]*audio.Resampler, set.Channels)
	for i := range sess.resamplers {
		if sess.resamplers[i], err = audio.NewResampler(set.SampleRate, 16000); err != nil {
			return err
		}
	}
	stream, err := sess.srv.cfg.Engine.NewStream(engine.StreamConfig{
		Channels:        set.Channels,
		Endpointing:     sess.endpointing,
		MaxUtterance:    sess.maxUtter,
		SpeechThreshold: sess.threshold,
		Languages:       liveLanguages(sess.req),
		Vocabulary:      liveVocabulary(sess.req),
	})
	if err != nil {
		sess.log.WithError(err).Error("engine stream")
		return err
	}
	sess.stream = stream
	sess.decoder = decoder
	sess.startRecordingLocked()
	sess.srv.jobs.update(sess.id, func(j *api.Job) { j.Status = api.StatusProcessing })
	sess.emitLocked(api.MessageStartSession, nil, nil)
	sess.emitLocked(api.MessageStartRecording, nil, nil)
	return nil
}

// handleFrameLocked handles one client frame; it reports whether the client stopped the
// recording, and whether the session reached its maximum duration.
func (sess *session) handleFrameLocked(typ websocket.MessageType, data []byte) (stop, limit bool) {
	if typ == websocket.MessageBinary {
		return false, sess.receiveLocked(data)
	}
	var msg api.ClientMessage
	if err := json.Unmarshal(data, &msg); err != nil {
		sess.emitErrorLocked("message is not JSON: send audio as binary frames or {\"type\":\"audio_chunk\",\"data\":{\"chunk\":\"<base64>\"}}")
		return false, false
	}
	switch msg.Type {
	case api.ClientAudioChunk:
		chunk, problem := audioChunkData(msg.Data)
		if problem != "" {
			sess.nackLocked(api.MessageAudioChunk, problem)
			return false, false
		}
		return false, sess.receiveLocked(chunk)
	case api.ClientStopRecording:
		return true, false
	default:
		sess.emitErrorLocked("unknown message type " + quote(msg.Type) + ": expected audio_chunk or stop_recording")
		return false, false
	}
}

// audioChunkData reads the audio of an audio_chunk message, or says what is wrong with it. An
// empty chunk is audio of no bytes, acknowledged as an empty range like an empty binary frame:
// pipecat sends {"chunk":""} as a keepalive and documents that the service accepts it.
func audioChunkData(data json.RawMessage) (chunk []byte, problem string) {
	var d struct {
		Chunk *string `json:"chunk"`
	}
	if err := json.Unmarshal(data, &d); err != nil || d.Chunk == nil {
		return nil, "audio_chunk needs data.chunk with base64 audio"
	}
	chunk, err := base64.StdEncoding.DecodeString(*d.Chunk)
	if err != nil {
		return nil, "data.chunk is not valid base64: " + err.Error()
	}
	return chunk, ""
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// finishLocked ends the recording and runs post-processing: the remaining finals, the
// stop_recording acknowledgment (when the client asked), end_recording, post_* messages,
// end_session; then the job is done and holds every message.
func (sess *session) finishLocked() {
	if sess.state == stateEnded {
		return
	}
	if sess.idle != nil {
		sess.idle.Stop()
	}
	if !sess.started {
		sess.started = true
		if err := sess.startLocked(); err != nil {
			return
		}
	}
	if sess.align != nil {
		sess.resumeLocked() // the client stopped while its resend was held
	}
	if sess.stream != nil {
		// The resamplers hold the last few milliseconds until they know the stream ended.
		tail := make([][]float32, len(sess.resamplers))
		for ch, r := range sess.resamplers {
			tail[ch] = r.Flush()
		}
		if len(tail) > 0 && len(tail[0]) > 0 {
			events, err := sess.stream.Feed(tail)
			if err != nil {
				sess.emitErrorLocked("speech engine failed: " + err.Error())
			}
			sess.engineEventsLocked(events)
		}
		events, err := sess.stream.Finish()
		if err != nil {
			sess.emitErrorLocked("speech engine failed: " + err.Error())
		}
		sess.engineEventsLocked(events)
	}
	sess.closeRecordingLocked()
	var duration float64
	if sess.decoder != nil {
		duration = round3(sess.decoder.Seconds())
	}
	if sess.stopAsked {
		sess.emitLocked(api.MessageStopRecording, api.StopRecordingAckData{RecordingDuration: duration}, api.Bool(true))
	}
	sess.emitLocked(api.MessageEndRecording, api.EndRecordingData{RecordingDuration: duration}, nil)

	lang := firstOr(liveLanguages(sess.req), "en")
	transcription := joinUtterances(sess.finals, lang)
	sess.emitLocked(api.MessagePostTranscript, transcription, nil)
	result, err := addons.ApplyLive(sess.srv.ctx, sess.req, transcription, addons.Options{})
	if err != nil {
		return // the sandbox is shutting down
	}
	result.Metadata = &api.Metadata{
		AudioDuration:            duration,
		NumberOfDistinctChannels: sess.settings.Channels,
		BillingTime:              duration,
	}
	if result.Chapterization != nil {
		sess.emitAddonLocked(api.MessagePostChapterization, result.Chapterization.Error, chapterData(result.Chapterization.Results))
	}
	if result.Summarization != nil {
		sess.emitAddonLocked(api.MessagePostSummarization, result.Summarization.Error, api.SummarizationData{Results: result.Summarization.Results})
	}
	sess.emitLocked(api.MessagePostFinalTranscript, result, nil)
	// end_session is recorded and the job done before the message leaves: whoever receives it
	// and reads the job finds it finished, with end_session in result.messages.
	end := api.LiveMessage{SessionID: sess.id, CreatedAt: api.Now(), Type: api.MessageEndSession}
	endBytes, err := sess.recordLocked(end)
	if err != nil {
		return
	}
	result.Messages = append([]string(nil), sess.messages...)
	sess.state = stateEnded
	sess.srv.jobs.update(sess.id, func(j *api.Job) {
		j.Status = api.StatusDone
		j.CompletedAt = api.PtrTime(time.Now())
		j.File = &api.File{
			ID: uuid.NewString(), Filename: liveFileName(sess.id), Source: "live",
			AudioDuration: duration, NumberOfChannels: sess.settings.Channels,
		}
		j.Result = api.RawResult(result)
	})
	sess.deliverLocked(end, endBytes)
	sess.srv.cb.closeLane(sess.id)
	sess.log.WithField("messages", len(sess.messages)).Info("live session ended")
	sess.abortOnce.Do(func() { close(sess.done) })
}

// armIdleLocked ends a detached session that nobody resumes, so its job does not stay in
// processing forever.
func (sess *session) armIdleLocked() {
	wait := sess.srv.cfg.LiveResumeWindow
	if wait <= 0 {
		wait = 30 * time.Second
	}
	sess.idle = time.AfterFunc(wait, func() {
		sess.mu.Lock()
		defer sess.mu.Unlock()
		if sess.state == stateDetached {
			sess.finishLocked()
		}
	})
}

// abort ends the session at shutdown or deletion without post-processing.
func (sess *session) abort() {
	sess.mu.Lock()
	conn := sess.conn
	if sess.idle != nil {
		sess.idle.Stop()
	}
	wasEnded := sess.state == stateEnded
	sess.state = stateEnded
	stream := sess.stream
	// Deleted or shutting down: the recording goes with the session.
	sess.closeRecordingLocked()
	if sess.recPath != "" {
		_ = os.Remove(sess.recPath)
		sess.recPath, sess.recBytes = "", 0
	}
	sess.mu.Unlock()
	if stream != nil && !wasEnded {
		_ = stream.Close()
	}
	if conn != nil {
		_ = conn.Close(websocket.StatusGoingAway, "session closed")
	}
	sess.abortOnce.Do(func() { close(sess.done) })
}

// chapterData is the post_chapterization data of the add-on's results: the same chapters, as an
// array (the message's results is a list, the add-on's an object).
func chapterData(r api.ChapterizationResults) api.ChapterizationData {
	d := api.ChapterizationData{Results: r.Chapters}
	if d.Results == nil {
		d.Results = []api.Chapter{}
	}
	return d
}

func joinUtterances(utts []api.Utterance, lang string) *api.Transcription {
	t := &api.Transcription{Languages: []string{lang}, Utterances: append([]api.Utterance{}, utts...)}
	texts := make([]string, 0, len(utts))
	for _, u := range utts {
		texts = append(texts, u.Text)
	}
	t.FullTranscript = strings.Join(texts, " ")
	return t
}

func liveLanguages(req *api.LiveRequest) []string {
	if req.LanguageConfig != nil {
		return req.LanguageConfig.Languages
	}
	return nil
}

func liveVocabulary(req *api.LiveRequest) []string {
	rp := req.RealtimeProcessing
	if rp == nil || !api.IsTrue(rp.CustomVocabulary) || rp.CustomVocabularyConfig == nil {
		return nil
	}
	var words []string
	for _, t := range rp.CustomVocabularyConfig.Vocabulary {
		words = append(words, t.Value)
	}
	return words
}

func firstOr(list []string, def string) string {
	if len(list) > 0 {
		return list[0]
	}
	return def
}
