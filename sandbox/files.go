package sandbox

import (
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/scribehook/scribehook/sandbox/audio"
)

const (
	// DefaultMaxUploadStoreBytes is Config.MaxUploadStoreBytes when unset: room for one upload
	// of the service's per-file limit (1000 MB), and a bound on what uploads can hold of a disk
	// (or of the memory of a tmpfs /tmp).
	DefaultMaxUploadStoreBytes int64 = 1 << 30
	// DefaultUploadTTL is Config.UploadTTL when unset.
	DefaultUploadTTL = time.Hour
)

// fileStore keeps uploads as files in the sandbox's directory, never in memory, within a total
// limit. An upload lives while a job made from it exists, and goes with the last such job; one
// that no job uses is removed ttl after it was uploaded (or after its last job went), so that
// uploads nobody submits do not pile up for the life of the process.
type fileStore struct {
	dir   string
	limit int64
	ttl   time.Duration

	mu    sync.Mutex
	files map[string]*storedFile
	used  int64 // bytes of the uploads held and of those being written
}

// storedFile is one upload. Its fields but refs and idleSince are set before it is shared.
type storedFile struct {
	store *fileStore
	id    string
	// token is the capability in the upload's audio_url: whoever has the URL may read the
	// file, as with a signed URL, and nobody else without the API key.
	token       string
	name        string
	contentType string // audio/wav when the file is a WAV, else application/octet-stream
	path        string
	size        int64
	created     time.Time
	header      *audio.Header // nil when the file is not a WAV

	refs      int       // jobs made from the upload
	idleSince time.Time // when refs last became 0 (or the upload was made)
}

// storeFullError refuses an upload that would take the uploads held past their total limit.
type storeFullError struct{ limit int64 }

func (e *storeFullError) Error() string {
	return fmt.Sprintf("uploads held by the sandbox would exceed their total limit of %d bytes", e.limit)
}

func newFileStore(dir string, limit int64, ttl time.Duration) *fileStore {
	return &fileStore{dir: dir, limit: limit, ttl: ttl, files: map[string]*storedFile{}}
}

// save writes r to a new upload within the per-file limit and the store's total; on any
// failure nothing of it is left. A *http.MaxBytesError or *storeFullError says which limit.
func (s *fileStore) save(r io.Reader, name string, limit int64) (*storedFile, error) {
	if name == "" || name == "." || name == "/" {
		name = "upload.wav"
	}
	f := &storedFile{store: s, id: uuid.NewString(), token: newToken(), name: name, contentType: "application/octet-stream"}
	f.path = filepath.Join(s.dir, "upload-"+f.id)
	out, err := os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create upload file: %w", err)
	}
	w := &quotaWriter{store: s, f: out}
	n, err := io.Copy(w, io.LimitReader(r, limit+1))
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write upload: %w", cerr)
	}
	if err == nil && n > limit {
		err = &http.MaxBytesError{Limit: limit}
	}
	if err == nil {
		err = f.readHeader()
	}
	if err != nil {
		_ = os.Remove(f.path)
		s.unreserve(w.reserved)
		return nil, fmt.Errorf("read upload: %w", err)
	}
	f.size = n
	f.created = time.Now()
	f.idleSince = f.created
	s.mu.Lock()
	s.files[f.id] = f
	s.mu.Unlock()
	return f, nil
}

// readHeader reads the WAV header of the written file, if it has one: the metadata of the
// upload's answer, and whether it is served as audio/wav on GET …/{id}/file.
func (f *storedFile) readHeader() error {
	in, err := os.Open(f.path)
	if err != nil {
		return fmt.Errorf("reopen upload: %w", err)
	}
	defer in.Close()
	if h, err := audio.ReadHeader(in); err == nil {
		f.header = &h
		f.contentType = "audio/wav"
	}
	return nil
}

// quotaWriter reserves room in the store's total before each write.
type quotaWriter struct {
	store    *fileStore
	f        *os.File
	reserved int64
}

func (w *quotaWriter) Write(p []byte) (int, error) {
	if !w.store.reserve(int64(len(p))) {
		return 0, &storeFullError{limit: w.store.limit}
	}
	w.reserved += int64(len(p))
	return w.f.Write(p)
}

func (s *fileStore) reserve(n int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used+n > s.limit {
		return false
	}
	s.used += n
	return true
}

func (s *fileStore) unreserve(n int64) {
	s.mu.Lock()
	s.used -= n
	s.mu.Unlock()
}

// get returns the upload id if it is still held (an expired one is removed on the way).
func (s *fileStore) get(id string) (*storedFile, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.liveLocked(id, time.Now())
}

// acquire is get for a job made from the upload, which holds it until released; token must be
// the one of the upload's URL.
func (s *fileStore) acquire(id, token string) (*storedFile, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.liveLocked(id, time.Now())
	if !ok || !f.tokenMatches(token) {
		return nil, false
	}
	f.refs++
	return f, true
}

func (f *storedFile) tokenMatches(token string) bool {
	return subtle.ConstantTimeCompare([]byte(token), []byte(f.token)) == 1
}

// release drops a job's hold; the upload goes with the last job made from it.
func (f *storedFile) release() {
	s := f.store
	s.mu.Lock()
	defer s.mu.Unlock()
	f.refs--
	if f.refs <= 0 {
		s.removeLocked(f)
	}
}

func (s *fileStore) liveLocked(id string, now time.Time) (*storedFile, bool) {
	f, ok := s.files[id]
	if !ok {
		return nil, false
	}
	if f.refs == 0 && now.Sub(f.idleSince) >= s.ttl {
		s.removeLocked(f)
		return nil, false
	}
	return f, true
}

// removeLocked forgets f and deletes its file; a reader that opened it already keeps reading.
func (s *fileStore) removeLocked(f *storedFile) {
	if s.files[f.id] != f {
		return
	}
	delete(s.files, f.id)
	s.used -= f.size
	_ = os.Remove(f.path)
}

// expire removes the uploads no job has used for ttl.
func (s *fileStore) expire(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.files {
		if f.refs == 0 && now.Sub(f.idleSince) >= s.ttl {
			s.removeLocked(f)
		}
	}
}

// sweepInterval is how often expire runs: often enough that an upload outlives its TTL by at
// most half of it, and at most once a minute.
func sweepInterval(ttl time.Duration) time.Duration {
	return min(max(ttl/2, 10*time.Millisecond), time.Minute)
}

// sweepUploads runs expire until the server stops.
func (s *Server) sweepUploads() {
	defer s.wg.Done()
	t := time.NewTicker(sweepInterval(s.cfg.UploadTTL))
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			s.files.expire(now)
		}
	}
}

// open opens the upload's file; it fails when the upload was removed meanwhile.
func (f *storedFile) open() (*os.File, error) {
	in, err := os.Open(f.path)
	if err != nil {
		return nil, fmt.Errorf("open upload: %w", err)
	}
	return in, nil
}

// putBack drops a hold without removing the upload: the job was refused before it existed (a
// full queue), and the client may submit the same audio_url again until the TTL.
func (f *storedFile) putBack() {
	s := f.store
	s.mu.Lock()
	defer s.mu.Unlock()
	f.refs--
	if f.refs <= 0 {
		f.refs = 0
		f.idleSince = time.Now()
	}
}
