package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/sandbox/audio"
	"github.com/scribehook/scribehook/sandbox/engine"
	"github.com/scribehook/scribehook/sandbox/internal/addons"
)

// jobFailure ends a job in error with an HTTP-style code and a message for the callback.
type jobFailure struct {
	code int
	msg  string
}

func (f *jobFailure) Error() string { return f.msg }

func fail(code int, format string, args ...any) *jobFailure {
	return &jobFailure{code: code, msg: fmt.Sprintf(format, args...)}
}

func (s *Server) worker() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case id := <-s.queue:
			s.process(s.ctx, id)
		}
	}
}

// process moves one job queued → processing → done | error and sends its callback. A panic
// in decoding or in an engine ends the job in error rather than the sandbox.
func (s *Server) process(ctx context.Context, id string) {
	e, ok := s.jobs.entry(id)
	if !ok {
		return // deleted while queued
	}
	log := s.log.WithField("job_id", id)
	if !sleepCtx(ctx, s.cfg.ProcessingDelay) {
		return
	}
	if _, ok := s.jobs.update(id, func(j *api.Job) { j.Status = api.StatusProcessing }); !ok {
		return
	}
	if !sleepCtx(ctx, s.cfg.ProcessingDelay) {
		return
	}
	var upload *storedFile
	if e.audio != nil {
		// Set before the job was queued, and held by the job: the upload cannot go meanwhile.
		upload = e.audio.upload
	}
	started := time.Now()
	result, file, kept, err := s.transcribeSafely(ctx, id, e.prerecorded, upload)
	if kept != nil && kept.upload == nil && !s.jobs.setAudio(id, kept) {
		kept.remove() // the job was deleted meanwhile
	}
	if ctx.Err() != nil {
		return
	}
	var failure *jobFailure
	if err == nil && s.cfg.Faults.FailJobRate > 0 && s.cb.dice.float() < s.cfg.Faults.FailJobRate {
		err = fail(http.StatusInternalServerError, "job failed by fault injection (fail-jobs)")
	}
	if err != nil && !errors.As(err, &failure) {
		failure = fail(http.StatusInternalServerError, "internal error: %v", err)
	}
	job, ok := s.jobs.update(id, func(j *api.Job) {
		j.CompletedAt = api.PtrTime(time.Now())
		j.File = file
		if failure != nil {
			j.Status = api.StatusError
			code := failure.code
			j.ErrorCode = &code
			j.PostSessionMetadata, _ = json.Marshal(map[string]any{"error_message": failure.msg})
			return
		}
		result.Metadata.TranscriptionTime = round3(time.Since(started).Seconds())
		j.Status = api.StatusDone
		j.Result = api.RawResult(result)
	})
	if !ok {
		return
	}
	if failure != nil {
		log.WithField("error_code", failure.code).Warn("job failed: " + failure.msg)
	} else {
		log.Info("job done")
	}
	s.sendJobCallback(e.prerecorded, job, failure)
}

func (s *Server) transcribeSafely(ctx context.Context, id string, req *api.PreRecordedRequest, upload *storedFile) (res *api.Result, file *api.File, kept *keptAudio, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.WithField("job_id", id).Errorf("panic while processing: %v", p)
			res, err = nil, fail(http.StatusInternalServerError, "internal error while processing the audio")
		}
	}()
	return s.transcribe(ctx, s.log.WithField("job_id", id), id, req, upload)
}

// transcribe runs the job's audio (upload, else what req.AudioURL serves) through the engine
// and the add-ons; it returns the audio it kept for GET /v2/pre-recorded/{id}/file whether or
// not the rest succeeds.
func (s *Server) transcribe(ctx context.Context, log logrus.FieldLogger, id string, req *api.PreRecordedRequest, upload *storedFile) (*api.Result, *api.File, *keptAudio, error) {
	a, kept, err := s.loadAudio(ctx, log, id, req.AudioURL, upload)
	if err != nil {
		return nil, nil, kept, err
	}
	duration := round3(a.Duration().Seconds())
	file := &api.File{
		ID:               uuid.NewString(),
		Filename:         fileName(req.AudioURL),
		Source:           req.AudioURL,
		AudioDuration:    duration,
		NumberOfChannels: a.Channels,
	}
	if kept != nil && kept.upload != nil {
		// An upload is known by its id and the name it was uploaded under, not by the last
		// segment of its URL (the id again).
		file.ID, file.Filename = kept.upload.id, kept.upload.name
	}
	result, err := s.transcribeAudio(ctx, log, req, a, upload != nil)
	if err != nil {
		return nil, file, kept, err
	}
	result.Metadata = &api.Metadata{
		AudioDuration:            duration,
		NumberOfDistinctChannels: a.Channels,
		BillingTime:              duration,
	}
	return result, file, kept, nil
}

// transcribeAudio is the engine, then the add-ons, on decoded audio.
func (s *Server) transcribeAudio(ctx context.Context, log logrus.FieldLogger, req *api.PreRecordedRequest, a *audio.Audio, uploaded bool) (*api.Result, error) {
	channels, err := a.Resample16k()
	if err != nil {
		return nil, fail(http.StatusUnprocessableEntity, "audio could not be resampled: %v", err)
	}
	langs := requestLanguages(req)
	out, err := s.cfg.Engine.Transcribe(ctx, engine.Request{
		Channels:   channels,
		SampleRate: 16000,
		Languages:  langs,
		Vocabulary: vocabularyWords(req.CustomVocabulary, req.CustomVocabularyConfig),
		Sidecar:    s.fetchSidecar(ctx, log, req.AudioURL, uploaded),
	})
	if err != nil {
		var unsupported *engine.UnsupportedError
		if errors.As(err, &unsupported) {
			return nil, fail(http.StatusUnprocessableEntity, "%v", err)
		}
		return nil, fail(http.StatusInternalServerError, "transcription failed: %v", err)
	}
	lang := "en"
	if len(langs) > 0 {
		lang = langs[0]
	}
	return addons.Apply(ctx, req, toTranscription(out, lang), addons.Options{})
}

// acquireUpload resolves an audio_url that points at this sandbox's own uploads, token
// included, and holds the upload for the job made from it (release it with the job). Any
// other URL, or one whose upload is gone, is fetched like any audio_url.
func (s *Server) acquireUpload(rawURL string) (*storedFile, bool) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, false
	}
	id, ok := strings.CutPrefix(u.Path, "/v2/files/")
	if !ok {
		return nil, false
	}
	return s.files.acquire(id, u.Query().Get("token"))
}

func fileName(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Path == "" {
		return "audio"
	}
	return path.Base(u.Path)
}

// requestLanguages is the languages the job asks for after the deprecated fields are mapped;
// empty means detect.
func requestLanguages(req *api.PreRecordedRequest) []string {
	if req.LanguageConfig != nil {
		return req.LanguageConfig.Languages
	}
	return nil
}

func vocabularyWords(cv *api.CustomVocabulary, cfg *api.CustomVocabularyConfig) []string {
	if cv == nil || !cv.Enabled {
		return nil
	}
	var words []string
	for _, t := range cv.Terms {
		words = append(words, t.Value)
	}
	if cfg != nil {
		for _, t := range cfg.Vocabulary {
			words = append(words, t.Value)
		}
	}
	return words
}

// toTranscription turns engine output into the service's transcription shape: utterances in
// time order, text joined from words, full_transcript joined from utterances.
func toTranscription(out engine.Result, lang string) *api.Transcription {
	t := &api.Transcription{Languages: []string{lang}, Utterances: []api.Utterance{}}
	var texts []string
	for _, u := range out.Utterances {
		words := make([]api.Word, 0, len(u.Words))
		var parts []string
		for _, w := range u.Words {
			words = append(words, api.Word{
				Word: " " + w.Text, Start: round3(w.Start), End: round3(w.End), Confidence: round3(w.Confidence),
			})
			parts = append(parts, w.Text)
		}
		if len(words) > 0 {
			// The service puts a space before every word but the first of an utterance.
			words[0].Word = strings.TrimPrefix(words[0].Word, " ")
		}
		text := strings.Join(parts, " ")
		if u.Text != "" {
			text = u.Text
		}
		speaker := u.Speaker
		l := u.Language
		if l == "" {
			l = lang
		}
		t.Utterances = append(t.Utterances, api.Utterance{
			Start: round3(u.Start), End: round3(u.End), Confidence: round3(u.Confidence),
			Channel: u.Channel, Words: words, Text: text, Language: l, Speaker: &speaker,
		})
		texts = append(texts, text)
	}
	t.FullTranscript = strings.Join(texts, " ")
	return t
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// sendJobCallback sends the success or error body of provider-facts.md when the job asked for
// a callback: callback_config with its method, else the deprecated callback_url with POST.
func (s *Server) sendJobCallback(req *api.PreRecordedRequest, job api.Job, failure *jobFailure) {
	target, method := callbackTarget(req)
	if target == "" {
		return
	}
	body := api.JobCallback{ID: job.ID, CustomMetadata: job.CustomMetadata}
	if failure != nil {
		body.Event = api.EventTranscriptionError
		body.Error = &api.CallbackError{Code: failure.code, Message: failure.msg}
	} else {
		body.Event = api.EventTranscriptionSuccess
		res, err := job.DecodeResult()
		if err != nil {
			s.log.WithError(err).WithField("job_id", job.ID).Error("decode result")
			return
		}
		body.Payload = res
	}
	b, err := json.Marshal(body)
	if err != nil {
		s.log.WithError(err).WithField("job_id", job.ID).Error("encode callback")
		return
	}
	s.cb.send(outbound{url: target, method: method, body: b, key: job.ID, event: body.Event})
}

func callbackTarget(req *api.PreRecordedRequest) (string, string) {
	if api.IsTrue(req.Callback) && req.CallbackConfig != nil && req.CallbackConfig.URL != "" {
		method := strings.ToUpper(req.CallbackConfig.Method)
		if method == "" {
			method = http.MethodPost
		}
		return req.CallbackConfig.URL, method
	}
	if req.CallbackURL != "" {
		return req.CallbackURL, http.MethodPost
	}
	return "", ""
}
