package sandbox

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
)

// fileStore keeps uploaded audio in memory for the sandbox's lifetime.
type fileStore struct {
	mu    sync.RWMutex
	files map[string]*storedFile
}

type storedFile struct {
	id          string
	name        string
	contentType string
	data        []byte
	created     time.Time
}

func newFileStore() *fileStore { return &fileStore{files: map[string]*storedFile{}} }

func (s *fileStore) save(r io.Reader, name string, limit int64) (*storedFile, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read upload: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	if name == "" || name == "." || name == "/" {
		name = "upload.wav"
	}
	f := &storedFile{
		id:          uuid.NewString(),
		name:        name,
		contentType: http.DetectContentType(data),
		data:        data,
		created:     time.Now(),
	}
	if bytes.HasPrefix(data, []byte("RIFF")) {
		f.contentType = "audio/wav"
	}
	s.mu.Lock()
	s.files[f.id] = f
	s.mu.Unlock()
	return f, nil
}

func (s *fileStore) get(id string) (*storedFile, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f, ok := s.files[id]
	return f, ok
}

func bytesReader(b []byte) io.ReadSeeker { return bytes.NewReader(b) }
