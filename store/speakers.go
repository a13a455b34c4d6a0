package store

import (
	"context"
	"errors"
	"time"

	"github.com/scribehook/scribehook/api"
)

// ErrRevisionConflict is returned by SetSpeakers when the stored revision is no longer the one
// the caller rendered from: another naming committed first. The caller reads again and retries.
var ErrRevisionConflict = errors.New("speaker names changed meanwhile")

// Speakers is what is stored about a job's speakers: the names given to its diarized speaker
// numbers and the revision of the subtitles last rendered with them.
type Speakers struct {
	JobID string
	Names api.SpeakerNames
	// Revision is the revision of the job's subtitles rendered with Names: the subtitles.ready
	// event of that rendering carries it. 0 when the names were stored before the job had
	// subtitles (the pipeline's first rendering, revision 1, uses them).
	Revision  int64
	UpdatedAt time.Time
}

// SpeakerNaming keeps the names of jobs' speakers (PUT /v1/jobs/{id}/speakers): a role outside
// Store that both drivers implement, as SinkReplay. Inside an Apply, Tx.Speakers reads them.
type SpeakerNaming interface {
	// Speakers reads a job's names; a job without any gives Speakers{JobID: id} (no error),
	// whether or not the job is known.
	Speakers(ctx context.Context, jobID string) (Speakers, error)
	// SetSpeakers stores s (its names, revision and time, replacing the job's earlier ones)
	// and runs fn in the same durable transaction: the artifacts and the events of the
	// subtitles rendered with them (an outbox). It holds the job's lock as an Apply does, and
	// stores only if the job's stored revision is still expect (0 when none is stored), else
	// ErrRevisionConflict; a job without a record is ErrNotFound. fn's error rolls all back.
	SetSpeakers(ctx context.Context, s Speakers, expect int64, fn func(ctx context.Context, tx Tx) error) error
}
