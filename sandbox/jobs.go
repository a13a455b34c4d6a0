package sandbox

import (
	"bytes"
	"encoding/json"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"time"

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

func (s *jobStore) delete(id string, kind api.JobKind) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.jobs[id]
	if !ok || (kind != "" && e.job.Kind != kind) {
		return false
	}
	delete(s.jobs, id)
	return true
}

// filter is a validated list query.
type filter struct {
	q      api.ListQuery
	day    string
	before time.Time
	after  time.Time
	meta   map[string]any
}

func newFilter(q api.ListQuery) (filter, error) {
	f := filter{q: q}
	if q.Date != "" {
		f.day = q.Date
	}
	var err error
	if q.BeforeDate != "" {
		if f.before, err = api.ParseTime(q.BeforeDate); err != nil {
			return f, err
		}
	}
	if q.AfterDate != "" {
		if f.after, err = api.ParseTime(q.AfterDate); err != nil {
			return f, err
		}
	}
	if len(q.CustomMetadata) > 0 {
		if err := decodeNumbers(q.CustomMetadata, &f.meta); err != nil {
			return f, err
		}
	}
	return f, nil
}

func (f filter) match(j *api.Job) bool {
	if len(f.q.Status) > 0 && !containsStatus(f.q.Status, j.Status) {
		return false
	}
	if len(f.q.Kind) > 0 && !containsKind(f.q.Kind, j.Kind) {
		return false
	}
	created := j.CreatedAt.UTC()
	if f.day != "" && created.Format("2006-01-02") != f.day {
		return false
	}
	if !f.before.IsZero() && !created.Before(f.before) {
		return false
	}
	if !f.after.IsZero() && !created.After(f.after) {
		return false
	}
	if f.meta != nil {
		var have map[string]any
		if len(j.CustomMetadata) == 0 || decodeNumbers(j.CustomMetadata, &have) != nil || !subset(f.meta, have) {
			return false
		}
	}
	return true
}

func containsStatus(list []api.JobStatus, s api.JobStatus) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func containsKind(list []api.JobKind, k api.JobKind) bool {
	for _, v := range list {
		if v == k {
			return true
		}
	}
	return false
}

// decodeNumbers keeps numbers as json.Number so that 1 and 1.0 or large ids compare by text.
func decodeNumbers(raw json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	return d.Decode(v)
}

// subset reports whether every member of want is in have with an equal value; objects match
// recursively (a subset of a nested object matches), other values exactly.
func subset(want, have map[string]any) bool {
	for k, wv := range want {
		hv, ok := have[k]
		if !ok {
			return false
		}
		wm, wIsMap := wv.(map[string]any)
		hm, hIsMap := hv.(map[string]any)
		switch {
		case wIsMap && hIsMap:
			if !subset(wm, hm) {
				return false
			}
		case wIsMap || hIsMap:
			return false
		default:
			if !jsonEqual(wv, hv) {
				return false
			}
		}
	}
	return true
}

func jsonEqual(a, b any) bool {
	if an, ok := a.(json.Number); ok {
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		af, aerr := strconv.ParseFloat(string(an), 64)
		bf, berr := strconv.ParseFloat(string(bn), 64)
		if aerr == nil && berr == nil && string(an) != string(bn) {
			return af == bf
		}
		return an == bn
	}
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	return bytes.Equal(ab, bb)
}

// list returns the matching jobs newest first, the page asked for, and whether more follow.
func (s *jobStore) list(f filter, offset, limit int) ([]api.Job, bool) {
	s.mu.RLock()
	matched := make([]*jobEntry, 0, len(s.jobs))
	for _, e := range s.jobs {
		if f.match(&e.job) {
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

// pageURL is an absolute list URL carrying the filter, offset and limit.
func pageURL(base, path string, q api.ListQuery, offset, limit int) string {
	q.Offset, q.Limit = &offset, &limit
	u := url.URL{Path: path, RawQuery: q.Values().Encode()}
	return base + u.String()
}
