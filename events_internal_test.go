package scribehook

import (
	"context"
	"testing"

	"github.com/scribehook/scribehook/api"
)

// JobFailed hands fn the failed job's record, decoded from a job.failed event as the pipeline
// encodes it.
func TestJobFailedDecodesTheRecord(t *testing.T) {
	code := 422
	job := api.Job{ID: "job-1", Kind: api.KindPreRecorded, Status: api.StatusError, ErrorCode: &code}
	data, err := api.EncodeJob(&job, false)
	if err != nil {
		t.Fatal(err)
	}
	var got api.Job
	fn := JobFailed(func(_ context.Context, ev api.Event, j api.Job) error {
		got = j
		return nil
	})
	if err := fn(context.Background(), api.Event{ID: "ev-1", Type: api.EventJobFailed, JobID: job.ID, Data: data}); err != nil {
		t.Fatal(err)
	}
	if got.ID != job.ID || got.Status != api.StatusError || got.ErrorCode == nil || *got.ErrorCode != code {
		t.Errorf("JobFailed gave %+v", got)
	}
	if err := fn(context.Background(), api.Event{ID: "ev-2", Type: api.EventJobFailed, Data: []byte(`[`)}); err == nil {
		t.Error("JobFailed took data that does not decode")
	}
}
