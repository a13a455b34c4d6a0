package testjson_test

import (
	"testing"

	"github.com/scribehook/scribehook/internal/testjson"
)

func TestFullJob(t *testing.T) {
	var job struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	testjson.FullJob(t, &job)
	if job.ID != "0f4e7a55-4b8d-4c7e-9f0d-2f3b5b7b9a11" || job.Status != "done" {
		t.Fatalf("read id %q, status %q; want api's full job record, done", job.ID, job.Status)
	}
}
