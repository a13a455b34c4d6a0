package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/scribehook/scribehook/api"
)

// handleCreateLive validates a live request and answers 201 {id, created_at, url}; the URL holds
// a temporary token that alone authenticates the WebSocket.
func (s *Server) handleCreateLive(w http.ResponseWriter, r *http.Request) {
	region := r.URL.Query().Get("region")
	if err := api.ValidateRegion(region); err != nil {
		s.writeError(w, r, http.StatusUnprocessableEntity, "invalid parameter region: "+err.Error(), nil)
		return
	}
	var req api.LiveRequest
	if !s.decodeValid(w, r, &req) {
		return
	}
	recorded := req
	recorded.CustomMetadata = nil
	// The record names the model that runs the session, the default when none was asked for.
	recorded.Model = req.Settings().Model
	job, err := newRecord(r, api.KindLive, recorded, req.CustomMetadata)
	if err != nil {
		s.writeError(w, r, http.StatusInternalServerError, "could not record request parameters", nil)
		return
	}
	id, created, token := job.ID, job.CreatedAt, newToken()
	s.jobs.add(&jobEntry{
		job:  job,
		live: &req,
	})
	s.sessions.add(newSession(s, id, token, region, &req))
	s.log.WithField("session_id", id).Info("live session created")
	writeJSON(w, http.StatusCreated, api.CreateLiveResponse{
		ID:        id,
		CreatedAt: created,
		URL:       s.wsURL(r) + "/v2/live?token=" + url.QueryEscape(token),
	})
}

func (s *Server) wsURL(r *http.Request) string {
	base := s.baseURL(r)
	if rest, ok := strings.CutPrefix(base, "https://"); ok {
		return "wss://" + rest
	}
	return "ws://" + strings.TrimPrefix(base, "http://")
}

// newToken is 256 random bits, hex: unguessable, and single-session.
func newToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// sessionStore finds live sessions by id and by token.
type sessionStore struct {
	mu      sync.Mutex
	byID    map[string]*session
	byToken map[string]*session
}

func newSessionStore() *sessionStore {
	return &sessionStore{byID: map[string]*session{}, byToken: map[string]*session{}}
}

func (s *sessionStore) add(sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID[sess.id] = sess
	s.byToken[sess.token] = sess
}

func (s *sessionStore) get(id string) (*session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.byID[id]
	return sess, ok
}

func (s *sessionStore) token(tok string) (*session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.byToken[tok]
	return sess, ok
}

// drop forgets a session (deleted job) and ends it if it runs.
func (s *sessionStore) drop(id string) {
	s.mu.Lock()
	sess, ok := s.byID[id]
	if ok {
		delete(s.byID, id)
		delete(s.byToken, sess.token)
	}
	s.mu.Unlock()
	if ok {
		sess.abort()
	}
}

func (s *sessionStore) closeAll() {
	s.mu.Lock()
	all := make([]*session, 0, len(s.byID))
	for _, sess := range s.byID {
		all = append(all, sess)
	}
	s.mu.Unlock()
	for _, sess := range all {
		sess.abort()
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
