package sandbox

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/sandbox/audio"
)

// keptAudio is the audio of a pre-recorded job as the client gave it, for GET
// /v2/pre-recorded/{id}/file: an upload of this sandbox (held by the file store already), or
// the copy of a fetched audio_url written to the sandbox's directory while it was decoded.
type keptAudio struct {
	upload      *storedFile
	path        string // the copy on disk, owned by the job: removed with it
	name        string
	contentType string
}

// uploadAudio is the kept audio of a job made from an upload: the upload itself, which the
// job holds (fileStore.acquire).
func uploadAudio(f *storedFile) *keptAudio {
	return &keptAudio{upload: f, name: f.name, contentType: f.contentType}
}

// remove frees what the job kept: its copy, or its hold on the upload (the upload goes with
// the last job made from it).
func (a *keptAudio) remove() {
	switch {
	case a == nil:
	case a.upload != nil:
		a.upload.release()
	case a.path != "":
		_ = os.Remove(a.path)
	}
}

// setAudio gives the job its kept audio; false when the job is gone (deleted while it was
// processed), in which case the caller removes the copy.
func (s *jobStore) setAudio(id string, a *keptAudio) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.jobs[id]
	if !ok {
		return false
	}
	e.audio = a
	return true
}

// audioOf returns the job's kept audio (nil while there is none) and whether the job exists.
func (s *jobStore) audioOf(id string, kind api.JobKind) (*keptAudio, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.jobs[id]
	if !ok || e.job.Kind != kind {
		return nil, false
	}
	return e.audio, true
}

// keeper copies a fetched audio_url to disk as the decoder reads it. A failed write does not
// fail the job, whose transcription does not depend on the copy: the copy is dropped instead.
type keeper struct {
	f   *os.File
	err error
}

func (k *keeper) Write(p []byte) (int, error) {
	if k.err == nil {
		_, k.err = k.f.Write(p)
	}
	return len(p), nil
}

// newKeeper creates the job's copy; nil (and a log line) when the directory refuses it, so the
// job still runs.
func (s *Server) newKeeper(id string) *keeper {
	f, err := os.Create(filepath.Join(s.dir, "job-"+id+".audio"))
	if err != nil {
		s.log.WithError(err).WithField("job_id", id).Warn("audio copy not kept: GET /v2/pre-recorded/{id}/file will answer 404")
		return nil
	}
	return &keeper{f: f}
}

// finish closes the copy and returns it as the job's audio, or removes it when a write failed
// or keep is false (the audio did not decode).
func (k *keeper) finish(keep bool, name string) (*keptAudio, error) {
	if k == nil {
		return nil, nil
	}
	err := k.f.Close()
	if k.err != nil {
		err = k.err
	}
	if err != nil || !keep {
		_ = os.Remove(k.f.Name())
		if err != nil {
			return nil, fmt.Errorf("keep a copy of the audio: %w", err)
		}
		return nil, nil
	}
	// Only WAV decodes, so whatever was kept is WAV.
	return &keptAudio{path: k.f.Name(), name: name, contentType: "audio/wav"}, nil
}

// handleJobFile answers GET /v2/pre-recorded/{id}/file with the job's audio as it was given:
// the uploaded bytes, or those its audio_url served. A job whose audio_url has not been read
// yet, or could not be, has none: 404, like an unknown or deleted job.
func (s *Server) handleJobFile(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	a, ok := s.jobs.audioOf(id, api.KindPreRecorded)
	if !ok {
		s.writeError(w, r, http.StatusNotFound, notFoundMessage(api.KindPreRecorded, id), nil)
		return
	}
	if a == nil {
		s.writeError(w, r, http.StatusNotFound, fmt.Sprintf("pre-recorded job %s has no audio file: its audio_url has not been read yet, or could not be", id), nil)
		return
	}
	path := a.path
	if a.upload != nil {
		path = a.upload.path
	}
	f, err := os.Open(path)
	if err != nil {
		// Deleted between the lookup and now.
		s.writeError(w, r, http.StatusNotFound, notFoundMessage(api.KindPreRecorded, id), nil)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		s.writeError(w, r, http.StatusInternalServerError, "could not read the job's audio", nil)
		return
	}
	// The bytes are the client's: audio/wav only when they are a WAV, and never sniffed.
	setInertHeaders(w.Header())
	w.Header().Set("Content-Type", a.contentType)
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", a.name))
	w.Header().Set("x-request-id", requestID(r))
	http.ServeContent(w, r, a.name, info.ModTime(), f)
}

// handleLiveFile answers GET /v2/live/{id}/file with what the session's client streamed, as a
// WAV file: 16-bit PCM at the session's sample rate and channels (samples sent as 16-bit PCM,
// the default, come back unchanged; 8, 24 and 32-bit, A-law and µ-law are converted), the
// header the client may have sent left out. A session still streaming gives what it has so far;
// one that never connected, an empty WAV.
func (s *Server) handleLiveFile(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	_, ok := s.jobs.get(id, api.KindLive)
	sess, found := s.sessions.get(id)
	if !ok || !found {
		s.writeError(w, r, http.StatusNotFound, notFoundMessage(api.KindLive, id), nil)
		return
	}
	path, size, err := sess.recording()
	if err != nil {
		s.writeError(w, r, http.StatusInternalServerError, "the session's recording is incomplete: "+err.Error(), nil)
		return
	}
	var body io.Reader = eofReader{}
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			s.writeError(w, r, http.StatusNotFound, notFoundMessage(api.KindLive, id), nil)
			return
		}
		defer f.Close()
		body = io.NewSectionReader(f, 0, size)
	}
	header := audio.Header16(sess.settings.Channels, sess.settings.SampleRate, size)
	w.Header().Set("Content-Type", "audio/wav")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", liveFileName(id)))
	w.Header().Set("Content-Length", strconv.FormatInt(int64(len(header))+size, 10))
	w.Header().Set("x-request-id", requestID(r))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(header)
	_, _ = io.Copy(w, body)
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

func liveFileName(id string) string { return "live-" + id + ".wav" }

// recordAudioLocked appends decoded frames (one slice a channel) to the session's recording as
// interleaved 16-bit samples. A failed write stops the recording and is reported by
// GET /v2/live/{id}/file; the session itself goes on.
func (sess *session) recordAudioLocked(frames [][]float32) {
	if sess.rec == nil || sess.recErr != nil || len(frames) == 0 || len(frames[0]) == 0 {
		return
	}
	n, ch := len(frames[0]), len(frames)
	buf := make([]byte, 2*n*ch)
	for c, samples := range frames {
		for i, v := range audio.Int16(samples) {
			binary.LittleEndian.PutUint16(buf[2*(i*ch+c):], uint16(v))
		}
	}
	if _, err := sess.rec.Write(buf); err != nil {
		sess.recErr = fmt.Errorf("write %s: %w", sess.rec.Name(), err)
		sess.log.WithError(err).Warn("live recording stopped")
		return
	}
	sess.recBytes += int64(len(buf))
}

// startRecordingLocked opens the session's recording; without one the session still runs and
// GET /v2/live/{id}/file says why.
func (sess *session) startRecordingLocked() {
	f, err := os.Create(filepath.Join(sess.srv.dir, "live-"+sess.id+".pcm"))
	if err != nil {
		sess.recErr = fmt.Errorf("create the recording: %w", err)
		sess.log.WithError(err).Warn("live session not recorded")
		return
	}
	sess.rec, sess.recPath = f, f.Name()
}

// closeRecordingLocked closes the writer; the file stays for GET /v2/live/{id}/file.
func (sess *session) closeRecordingLocked() {
	if sess.rec != nil {
		if err := sess.rec.Close(); err != nil && sess.recErr == nil {
			sess.recErr = fmt.Errorf("close the recording: %w", err)
		}
		sess.rec = nil
	}
}

// recording is where the recording is and how many bytes of it are written.
func (sess *session) recording() (string, int64, error) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.recPath, sess.recBytes, sess.recErr
}
