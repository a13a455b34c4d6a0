package sandbox

import (
	"net/url"
	"sort"
	"sync"

	"github.com/scribehook/scribehook/api"
)

// jobStore holds every job of the sandbox in memory. Records are stored encoded-ready as
// api.Job values and copied out, so a reader never sees a job half-updated.
type jobStore struct {
	mu   sync.RWMutex
	jobs map[string]*jobEntry
	seq  int64
}

type jobEntry struct {
	job api.Job
	// order breaks ties between jobs created in the same instant so lists are stable.
	order int64
	// prerecorded is the normalised request of a pre-recorded job.
	prerecorded *api.PreRecordedRequest
	// live is the request of a live session.
	live *api.LiveRequest
	// audio is what GET /v2/pre-recorded/{id}/file serves; nil until there is some.
	audio *keptAudio
}

func newJobStore() *jobStore { return &jobStore{jobs: map[string]*jobEntry{}} }

func (s *jobStore) add(e *jobEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	e.order = s.seq
	s.jobs[e.job.ID] = e
}

// get returns a copy of the job; kind "" matches both kinds.
func (s *jobStore) get(id string, kind api.JobKind) (api.Job, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.jobs[id]
	if !ok || (kind != "" && e.job.Kind != kind) {
		return api.Job{}, false
	}
	return e.job, true
}

func (s *jobStore) entry(id string) (*jobEntry, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.jobs[id]
	return e, ok
}

// update applies fn to the stored job under the lock; false when the job is gone (deleted).
func (s *jobStore) update(id string, fn func(j *api.Job)) (api.Job, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.jobs[id]
	if !ok {
		return api.Job{}, false
	}
	fn(&e.job)
	return e.job, true
}

// delete forgets the job and removes its copy of the audio.
func (s *jobStore) delete(id string, kind api.JobKind) bool {
	s.mu.Lock()
	e, ok := s.jobs[id]
	if !ok || (kind != "" && e.job.Kind != kind) {
		s.mu.Unlock()
		return false
	}
	delete(s.jobs, id)
	s.mu.Unlock()
	e.audio.remove()
	return true
}

// list returns the jobs matching q and also, newest first, the page asked for, and whether more
// follow.
func (s *jobStore) list(q api.ListQuery, also func(*api.Job) bool, offset, limit int) ([]api.Job, bool) {
	s.mu.RLock()
	matched := make([]*jobEntry, 0, len(s.jobs))
	for _, e := range s.jobs {
		if q.Matches(&e.job) && also(&e.job) {
			matched = append(matched, e)
		}
	}
	sort.Slice(matched, func(i, k int) bool { return matched[i].order > matched[k].order })
	var page []api.Job
	for i := offset; i < len(matched) && i < offset+limit; i++ {
		page = append(page, matched[i].job)
	}
	more := offset+limit < len(matched)
	s.mu.RUnlock()
	if page == nil {
		page = []api.Job{}
	}
	return page, more
}

// pageURL is an absolute list URL carrying the filter (with extra, the parameters of the
// bracket form of custom_metadata, as given), offset and limit.
func pageURL(base, path string, q api.ListQuery, extra url.Values, offset, limit int) string {
	q.Offset, q.Limit = &offset, &limit
	v := q.Values()
	for k, vals := range extra {
		v[k] = vals
	}
	u := url.URL{Path: path, RawQuery: v.Encode()}
	return base + u.String()
}
