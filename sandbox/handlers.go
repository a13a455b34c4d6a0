package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/scribehook/scribehook/api"
)

func (s *Server) handleCreatePreRecorded(w http.ResponseWriter, r *http.Request) {
	var req api.PreRecordedRequest
	if !s.decodeValid(w, r, &req) {
		return
	}
	req.Normalize()
	recorded := req
	recorded.CustomMetadata = nil
	job, err := newRecord(r, api.KindPreRecorded, recorded, req.CustomMetadata)
	if err != nil {
		s.writeError(w, r, http.StatusInternalServerError, "could not record request parameters", nil)
		return
	}
	id := job.ID
	e := &jobEntry{
		job:         job,
		prerecorded: &req,
	}
	if f, ok := s.acquireUpload(req.AudioURL); ok {
		// GET …/file has it from the start, and the job holds the upload until it is deleted.
		e.audio = uploadAudio(f)
	}
	s.jobs.add(e)
	s.log.WithFields(map[string]any{"job_id": id, "request_id": e.job.RequestID}).Info("pre-recorded job queued")
	select {
	case s.queue <- id:
	default:
		// The queue is full: answer like the real service under its concurrency limit. The
		// upload stays (until its TTL) for the client's retry.
		if e.audio != nil && s.jobs.setAudio(id, nil) {
			e.audio.upload.putBack()
		}
		s.jobs.delete(id, "")
		s.writeError(w, r, http.StatusTooManyRequests, "too many jobs in progress; retry later", nil)
		return
	}
	w.Header().Set("Location", s.baseURL(r)+"/v2/pre-recorded/"+id)
	writeJSON(w, http.StatusCreated, api.CreateJobResponse{ID: id, ResultURL: s.baseURL(r) + "/v2/pre-recorded/" + id})
}

// decodeValid decodes the body into v and validates it, answering the error itself when either
// fails.
func (s *Server) decodeValid(w http.ResponseWriter, r *http.Request, v interface{ Validate() error }) bool {
	if herr := s.decodeBody(w, r, v); herr != nil {
		s.writeError(w, r, herr.status, herr.msg, herr.validation)
		return false
	}
	if err := v.Validate(); err != nil {
		s.writeValidation(w, r, err)
		return false
	}
	return true
}

// newRecord is the record of a job just created: queued, request_params holding params (the
// request without custom_metadata, which the record carries at its top).
func newRecord(r *http.Request, kind api.JobKind, params any, metadata json.RawMessage) (api.Job, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return api.Job{}, fmt.Errorf("encode request_params: %w", err)
	}
	return api.Job{
		ID:        uuid.NewString(),
		RequestID: requestID(r),
		Version:   api.RecordVersion,
		Status:    api.StatusQueued,
		// At the precision the record shows: a client that pages with after_date or
		// before_date set to a created_at it read must not get that job back.
		CreatedAt:      api.NewTime(time.Now().Truncate(time.Millisecond)),
		Kind:           kind,
		CustomMetadata: metadata,
		RequestParams:  raw,
	}, nil
}

// writeValidation answers 400 with every violation listed.
func (s *Server) writeValidation(w http.ResponseWriter, r *http.Request, err error) {
	var verrs api.ValidationErrors
	if errors.As(err, &verrs) {
		s.writeError(w, r, http.StatusBadRequest, "invalid request parameters", verrs.Sentences())
		return
	}
	s.writeError(w, r, http.StatusBadRequest, err.Error(), []string{err.Error()})
}

func (s *Server) getHandler(kind api.JobKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		job, ok := s.jobs.get(id, kind)
		if !ok {
			s.writeError(w, r, http.StatusNotFound, notFoundMessage(kind, id), nil)
			return
		}
		writeJSON(w, http.StatusOK, job)
	}
}

func notFoundMessage(kind api.JobKind, id string) string {
	what := "job"
	switch kind {
	case api.KindLive:
		what = "live session"
	case api.KindPreRecorded:
		what = "pre-recorded job"
	}
	return fmt.Sprintf("%s %s not found", what, id)
}

func (s *Server) deleteHandler(kind api.JobKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if !s.jobs.delete(id, kind) {
			s.writeError(w, r, http.StatusNotFound, notFoundMessage(kind, id), nil)
			return
		}
		s.sessions.drop(id)
		w.Header().Set("x-request-id", requestID(r))
		w.WriteHeader(http.StatusAccepted)
	}
}

type listKind int

const (
	listAll listKind = iota
	listPreRecorded
	listLive
)

func (s *Server) listHandler(which listKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		live := which == listLive
		values := r.URL.Query()
		q, err := api.ParseListQuery(values, live)
		// The SDKs' custom_metadata[key]=value form, which ParseListQuery leaves aside.
		meta, metaErrs := parseBracketFilter(values)
		if err != nil || len(metaErrs) > 0 {
			var verrs api.ValidationErrors
			if err != nil && !errors.As(err, &verrs) {
				s.writeValidation(w, r, err)
				return
			}
			s.writeValidation(w, r, append(verrs, metaErrs...))
			return
		}
		if err := q.Validate(live); err != nil {
			s.writeValidation(w, r, err)
			return
		}
		switch which {
		case listPreRecorded:
			q.Kind = []api.JobKind{api.KindPreRecorded}
		case listLive:
			q.Kind = []api.JobKind{api.KindLive}
		}
		offset, limit := q.EffectiveOffset(), q.EffectiveLimit()
		items, more := s.jobs.list(q, meta.matches, offset, limit)
		// Page links carry the caller's own filters: the endpoint's implied kind stays out.
		linkQ := q
		if which != listAll {
			linkQ.Kind = nil
		}
		base := s.baseURL(r)
		page := api.Page{
			First:   pageURL(base, r.URL.Path, linkQ, meta.params, 0, limit),
			Current: pageURL(base, r.URL.Path, linkQ, meta.params, offset, limit),
			Items:   items,
		}
		if more {
			next := pageURL(base, r.URL.Path, linkQ, meta.params, offset+limit, limit)
			page.Next = &next
		}
		writeJSON(w, http.StatusOK, page)
	}
}

// handleUpload takes one multipart file (field "audio", or the first file part) and answers
// with an audio_url served by the sandbox.
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxUploadBytes)
	mr, err := r.MultipartReader()
	if err != nil {
		s.writeError(w, r, http.StatusBadRequest, "upload must be multipart/form-data with an audio file part", nil)
		return
	}
	for {
		part, err := mr.NextPart()
		if err != nil {
			e := readFailed(err, "upload", s.cfg.MaxUploadBytes, "upload has no file part (send the audio in a part named \"audio\")")
			s.writeError(w, r, e.status, e.msg, nil)
			return
		}
		if part.FileName() == "" && part.FormName() != "audio" {
			continue
		}
		f, err := s.files.save(part, path.Base(part.FileName()), s.cfg.MaxUploadBytes)
		var full *storeFullError
		switch {
		case errors.As(err, &full):
			// 413 rather than a 5xx: clients retry a 5xx, and this one lasts until jobs are
			// deleted or unused uploads expire.
			s.writeError(w, r, http.StatusRequestEntityTooLarge, full.Error()+": delete the jobs made from earlier uploads, or wait for unused ones to expire", nil)
			return
		case err != nil:
			s.log.WithError(err).Warn("upload not kept")
			e := readFailed(err, "upload", s.cfg.MaxUploadBytes, "could not read upload")
			s.writeError(w, r, e.status, e.msg, nil)
			return
		}
		writeJSON(w, http.StatusCreated, UploadResponse{
			AudioURL:      s.baseURL(r) + "/v2/files/" + f.id + "?token=" + f.token,
			AudioMetadata: uploadMetadata(f),
		})
		return
	}
}

// UploadResponse answers POST /v2/upload.
type UploadResponse struct {
	AudioURL      string         `json:"audio_url"`
	AudioMetadata UploadMetadata `json:"audio_metadata"`
}

// UploadMetadata describes an uploaded file; the official SDKs' type of it requires every
// field.
type UploadMetadata struct {
	ID       string `json:"id"`
	Filename string `json:"filename"`
	// Extension is the detected format (wav), else the file name's extension without its dot.
	Extension        string  `json:"extension"`
	Size             int64   `json:"size"`
	AudioDuration    float64 `json:"audio_duration"`     // seconds; 0 when the audio is not WAV
	NumberOfChannels int     `json:"number_of_channels"` // 0 when the audio is not WAV
}

// uploadMetadata comes of the upload's WAV header only: the samples need not be decoded to
// know their length. An upload that is not WAV is still accepted (the job made from it fails
// instead, as with any audio_url), with the name's extension and no duration.
func uploadMetadata(f *storedFile) UploadMetadata {
	m := UploadMetadata{
		ID: f.id, Filename: f.name, Size: f.size,
		Extension: strings.ToLower(strings.TrimPrefix(path.Ext(f.name), ".")),
	}
	h := f.header
	if h == nil || h.Format.FrameSize() <= 0 || h.Format.SampleRate <= 0 {
		return m
	}
	data := f.size - h.DataOffset
	if h.DataSize >= 0 && h.DataSize < data {
		data = h.DataSize
	}
	frames := data / int64(h.Format.FrameSize())
	m.Extension = "wav"
	m.AudioDuration = round3(float64(frames) / float64(h.Format.SampleRate))
	m.NumberOfChannels = h.Format.Channels
	return m
}

// handleFile answers GET /v2/files/{id} with the upload's bytes, to the API key or to the
// token of the upload's audio_url. Whatever the bytes are, they are served as inert data (an
// upload is anyone's content, and a browser on the sandbox's site must neither render nor run
// it): application/octet-stream, not sniffed, as an attachment, under a CSP that forbids
// everything. A wrong token is a 404, like an unknown id, so that ids cannot be probed.
func (s *Server) handleFile(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(s.cfg.KeyHeader) != "" {
		s.authenticated(s.serveUpload).ServeHTTP(w, r)
		return
	}
	token := r.URL.Query().Get("token")
	if token == "" {
		s.writeError(w, r, http.StatusUnauthorized, fmt.Sprintf("missing API key: send it in the %s header, or use the audio_url the upload answered", s.cfg.KeyHeader), nil)
		return
	}
	f, ok := s.files.get(r.PathValue("id"))
	if !ok || !f.tokenMatches(token) {
		s.writeError(w, r, http.StatusNotFound, "file not found", nil)
		return
	}
	s.serveUpload(w, r)
}

// serveUpload serves the upload of the path's id to a caller already let through.
func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request) {
	f, ok := s.files.get(r.PathValue("id"))
	if !ok {
		s.writeError(w, r, http.StatusNotFound, "file not found", nil)
		return
	}
	in, err := f.open()
	if err != nil {
		// Removed between the lookup and now.
		s.writeError(w, r, http.StatusNotFound, "file not found", nil)
		return
	}
	defer in.Close()
	setInertHeaders(w.Header())
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", f.name))
	http.ServeContent(w, r, f.name, f.created, in)
}

// setInertHeaders keeps a browser from sniffing a served file into a type it runs, and from
// running anything in it should it be shown anyway.
func setInertHeaders(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
}
