package scribehook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/submitter"
)

// SourceSubmit marks the records of jobs scribehook created itself (store.Local.Source).
const SourceSubmit = "submit"

// Submitter creates pre-recorded jobs and live sessions at the service whose callbacks point
// back at a kit: it mints a per-job callback token and stores its hash, creates the job with
// callback_config.url = public_url/v1/callbacks/<token>, binds the token to the job, and
// records the job in the store, so that WaitJob can wait for its callback locally. It needs the
// kit's store, not a running kit: `scribehook submit` runs beside `scribehook serve`.
type Submitter struct {
	// Store is where tokens and job records go: the store of the kit that receives the
	// callbacks (a store.Store, or a SubmitterStore of the program's).
	Store SubmitterStore
	// Service is the client of the service.
	Service *submitter.Client
	// PublicURL is the base the service calls back (configs public_url).
	PublicURL string
	// Warnf, when set, is told about request fields the submitter replaces.
	Warnf func(format string, args ...any)
	// Now is the clock of token creation (default time.Now).
	Now func() time.Time
}

// SubmitterStore is what a Submitter needs of the store: it mints, binds and revokes callback
// tokens, and records the jobs it creates and reads them back. A store.Store is one.
type SubmitterStore interface {
	store.Tokens
	store.JobWriter
	GetJob(ctx context.Context, id string) (store.JobRecord, error)
}

// Submitter is a Submitter for this kit's store, service and public URL; an error without an
// API key.
func (k *Kit) Submitter() (*Submitter, error) {
	if k.service == nil {
		if k.names.given {
			return nil, fmt.Errorf("no service client: %s is not set", k.names.apiKey())
		}
		return nil, fmt.Errorf("no service client: set %s to the service API key", k.names.apiKey())
	}
	return &Submitter{Store: k.store, Service: k.service, PublicURL: k.cfg.PublicURL, Now: k.now}, nil
}

func (s *Submitter) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Submitter) warnf(format string, args ...any) {
	if s.Warnf != nil {
		s.Warnf(format, args...)
	}
}

// callbackURL is where the service sends the callbacks of the job token serves.
func (s *Submitter) callbackURL(token string) string {
	return configs.Config{PublicURL: s.PublicURL}.CallbackURL(token)
}

// Submit creates a pre-recorded job whose callback comes back to the kit, and returns the
// service's answer (the job's id and result URL), as StartLive returns the session's. The
// callback is sent with req.CallbackConfig.Method, POST or PUT (POST when empty); the
// request's callback URLs are replaced, and its other fields go to the service as they are. A
// token that serves no job (the service refused it) is revoked. When the job was created but
// recording it locally failed, the answer comes with the error: the job exists.
func (s *Submitter) Submit(ctx context.Context, req api.PreRecordedRequest) (api.CreateJobResponse, error) {
	method := http.MethodPost
	if req.CallbackConfig != nil && req.CallbackConfig.Method != "" {
		method = req.CallbackConfig.Method
	}
	if method != http.MethodPost && method != http.MethodPut {
		return api.CreateJobResponse{}, fmt.Errorf("callback_config.method %q: use POST or PUT", method)
	}
	if req.CallbackURL != "" {
		s.warnf("callback_url of the request is dropped: the callback goes to scribehook")
		req.CallbackURL = ""
	}
	if req.CallbackConfig != nil && req.CallbackConfig.URL != "" {
		s.warnf("callback_config.url of the request is replaced: the callback goes to scribehook")
	}
	token, hash, err := s.mint(ctx, api.KindPreRecorded)
	if err != nil {
		return api.CreateJobResponse{}, err
	}
	req.Callback = api.Bool(true)
	req.CallbackConfig = &api.CallbackConfig{URL: s.callbackURL(token), Method: method}
	created, err := s.Service.CreatePreRecorded(ctx, req)
	if err != nil {
		// The token serves no job: revoke it so that it never authenticates anything.
		_ = s.Store.RevokeToken(context.WithoutCancel(ctx), hash)
		return api.CreateJobResponse{}, err
	}
	if err := s.bind(ctx, hash, created.ID); err != nil {
		return created, err
	}
	params := req
	params.CustomMetadata = nil // the service keeps it at the top of the record
	if err := s.record(ctx, created.ID, api.KindPreRecorded, api.NewTime(s.now()), params, req.CustomMetadata); err != nil {
		return created, err
	}
	return created, nil
}

// LiveSession is a live session StartLive created: the service's answer (its ID and the URL of
// its WebSocket) and the settings it was created with, whose audio format Stream sends in.
type LiveSession struct {
	api.CreateLiveResponse
	// Settings are the session's effective settings: the request's encoding, bit depth, sample
	// rate and channels (and endpointing, model…), with the service's defaults for those it
	// left out (api.LiveRequest.Settings).
	Settings api.LiveSettings
}

// StreamOptions are opts with the session's audio format: the sample rate, bit depth and
// channels opts leaves at zero are the session's; one it gives that differs from the session's
// is an error naming both (the service would read the audio in the session's format).
func (l LiveSession) StreamOptions(opts submitter.StreamOptions) (submitter.StreamOptions, error) {
	for _, f := range []struct {
		name      string
		given     *int
		ofSession int
	}{
		{"SampleRate", &opts.SampleRate, l.Settings.SampleRate},
		{"BitDepth", &opts.BitDepth, l.Settings.BitDepth},
		{"Channels", &opts.Channels, l.Settings.Channels},
	} {
		switch {
		case *f.given == 0:
			*f.given = f.ofSession
		case *f.given != f.ofSession:
			return opts, fmt.Errorf("StreamOptions.%s is %d, the session's is %d: leave it zero, Stream takes the session's", f.name, *f.given, f.ofSession)
		}
	}
	return opts, nil
}

// StartLive creates a live session whose callbacks (the categories of
// req.CallbackConfig.MessagesConfig, or the service's defaults) come back to the kit. Stream
// sends its audio, in the format of req.
func (s *Submitter) StartLive(ctx context.Context, req api.LiveRequest, region string) (LiveSession, error) {
	var mc api.MessagesConfig
	if req.CallbackConfig != nil {
		if req.CallbackConfig.URL != "" {
			s.warnf("callback_config.url of the request is replaced: the callbacks go to scribehook")
		}
		mc = req.CallbackConfig.MessagesConfig
	}
	token, hash, err := s.mint(ctx, api.KindLive)
	if err != nil {
		return LiveSession{}, err
	}
	req.Callback = api.Bool(true)
	req.CallbackConfig = &api.LiveCallbackConfig{URL: s.callbackURL(token), MessagesConfig: mc}
	resp, err := s.Service.CreateLive(ctx, req, region)
	created := LiveSession{CreateLiveResponse: resp, Settings: req.Settings()}
	if err != nil {
		_ = s.Store.RevokeToken(context.WithoutCancel(ctx), hash)
		return LiveSession{}, err
	}
	if err := s.bind(ctx, hash, created.ID); err != nil {
		return created, err
	}
	params := req
	params.CustomMetadata = nil
	if err := s.record(ctx, created.ID, api.KindLive, created.CreatedAt, params, req.CustomMetadata); err != nil {
		return created, err
	}
	return created, nil
}

// Stream sends audio to a live session StartLive created and ends the recording: the
// submitter package's StreamLive with this submitter's client, the audio in the session's
// format (LiveSession.StreamOptions): opts says how to send it (chunks, pacing, resuming) and
// leaves SampleRate, BitDepth and Channels at zero.
func (s *Submitter) Stream(ctx context.Context, session LiveSession, audio io.Reader, opts submitter.StreamOptions, onMessage func(api.LiveMessage)) error {
	opts, err := session.StreamOptions(opts)
	if err != nil {
		return err
	}
	return s.Service.StreamLive(ctx, session.URL, audio, opts, onMessage)
}

// mint makes a per-job callback token and stores its hash with the job's kind; the job id is
// bound once the service has assigned it.
func (s *Submitter) mint(ctx context.Context, kind api.JobKind) (string, []byte, error) {
	token, err := store.NewToken()
	if err != nil {
		return "", nil, err
	}
	hash := store.HashToken(token)
	if err := s.Store.CreateToken(ctx, store.Token{Hash: hash, Kind: kind, CreatedAt: s.now()}); err != nil {
		return "", nil, fmt.Errorf("store callback token: %w", err)
	}
	return token, hash, nil
}

// bind ties the token to the job. A callback that arrived first has bound it already to the
// same job, which is fine; another job would mean a token minted twice.
func (s *Submitter) bind(ctx context.Context, hash []byte, jobID string) error {
	err := s.Store.BindToken(ctx, hash, jobID)
	if errors.Is(err, store.ErrTokenBound) {
		if t, lerr := s.Store.LookupToken(ctx, hash); lerr == nil && t.JobID == jobID {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("bind callback token to job %s: %w", jobID, err)
	}
	return nil
}

// record stores the job as scribehook knows it right after creating it, unless a callback was
// processed first: its record is newer and must not be overwritten, which CreateJob
// guarantees atomically.
func (s *Submitter) record(ctx context.Context, id string, kind api.JobKind, created api.Time, params any, metadata json.RawMessage) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encode request of job %s: %w", id, err)
	}
	rec := store.JobRecord{
		Job: api.Job{
			ID: id, Version: api.RecordVersion, Status: api.StatusQueued, CreatedAt: created, Kind: kind,
			// The params hold the callback URL, token included: redacted before anything keeps it.
			CustomMetadata: metadata, RequestParams: api.RedactRequestParams(raw),
		},
		Local: store.Local{Source: SourceSubmit, UpdatedAt: s.now()},
	}
	if _, err := s.Store.CreateJob(ctx, rec); err != nil {
		return fmt.Errorf("record job %s: %w", id, err)
	}
	return nil
}

// DefaultWaitEvery is how often WaitJob reads the store: reading it is cheap, and the service
// is never asked.
const DefaultWaitEvery = 200 * time.Millisecond

// WaitJob reads st (Kit.Records, or any store.JobReader) every `every` (DefaultWaitEvery
// when 0) until the job (or live session) id has a final status there — its callback was
// received and applied — or ctx ends. progress, when set, is called at each read with the
// status seen ("" while the job is not stored). It never polls the service.
func WaitJob(ctx context.Context, st store.JobReader, id string, every time.Duration, progress func(api.JobStatus)) (store.JobRecord, error) {
	if every <= 0 {
		every = DefaultWaitEvery
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		rec, err := st.GetJob(ctx, id)
		switch {
		case err == nil && rec.Job.Status.Final():
			return rec, nil
		case err != nil && !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil:
			return store.JobRecord{}, fmt.Errorf("read job %s: %w", id, err)
		}
		if progress != nil {
			progress(rec.Job.Status)
		}
		select {
		case <-ctx.Done():
			return store.JobRecord{}, fmt.Errorf("wait for job %s: %w", id, ctx.Err())
		case <-tick.C:
		}
	}
}
