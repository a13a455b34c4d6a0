package submitter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"go.opentelemetry.io/otel/trace"

	"github.com/scribehook/scribehook/api"
)

// Collection paths of the service.
const (
	pathPreRecorded   = "/v2/pre-recorded"
	pathTranscription = "/v2/transcription" // deprecated by the pre-recorded endpoints
	pathLive          = "/v2/live"
)

// Accepted success codes. The service answers 201, 200 and 202; a delete is also accepted
// with 200 or 204 because both mean the same to a caller.
var (
	wantCreated = []int{http.StatusCreated}
	wantOK      = []int{http.StatusOK}
	wantDeleted = []int{http.StatusAccepted, http.StatusOK, http.StatusNoContent}
)

// CreatePreRecorded starts a pre-recorded job (POST /v2/pre-recorded).
func (c *Client) CreatePreRecorded(ctx context.Context, req api.PreRecordedRequest) (api.CreateJobResponse, error) {
	return c.createJob(ctx, pathPreRecorded, req)
}

// CreateTranscription starts a pre-recorded job through the deprecated POST /v2/transcription.
func (c *Client) CreateTranscription(ctx context.Context, req api.PreRecordedRequest) (api.CreateJobResponse, error) {
	return c.createJob(ctx, pathTranscription, req)
}

func (c *Client) createJob(ctx context.Context, path string, req api.PreRecordedRequest) (api.CreateJobResponse, error) {
	var out api.CreateJobResponse
	err := c.do(ctx, call{method: http.MethodPost, path: path, body: req, want: wantCreated, out: &out})
	if err != nil {
		return api.CreateJobResponse{}, fmt.Errorf("create job: %w", err)
	}
	return out, nil
}

// CreateLive starts a live session (POST /v2/live). region (us-west, eu-west) travels as a
// query parameter; empty leaves the choice to the service.
func (c *Client) CreateLive(ctx context.Context, req api.LiveRequest, region string) (api.CreateLiveResponse, error) {
	var q url.Values
	if region != "" {
		q = url.Values{"region": {region}}
	}
	var out api.CreateLiveResponse
	err := c.do(ctx, call{method: http.MethodPost, path: pathLive, query: q, body: req, want: wantCreated, out: &out})
	if err != nil {
		return api.CreateLiveResponse{}, fmt.Errorf("create live session: %w", err)
	}
	return out, nil
}

// GetPreRecorded fetches a pre-recorded job (GET /v2/pre-recorded/{id}).
func (c *Client) GetPreRecorded(ctx context.Context, id string) (api.Job, error) {
	return c.getJob(ctx, pathPreRecorded, id)
}

// GetTranscription fetches a job through the deprecated GET /v2/transcription/{id}.
func (c *Client) GetTranscription(ctx context.Context, id string) (api.Job, error) {
	return c.getJob(ctx, pathTranscription, id)
}

// GetLive fetches a live session's job record (GET /v2/live/{id}).
func (c *Client) GetLive(ctx context.Context, id string) (api.Job, error) {
	return c.getJob(ctx, pathLive, id)
}

func (c *Client) getJob(ctx context.Context, collection, id string) (out api.Job, err error) {
	p, err := itemPath(collection, id)
	if err != nil {
		return api.Job{}, err
	}
	if c.tracer.On() {
		var span trace.Span
		ctx, span = c.startGet(ctx, collection, id)
		defer func() { endGet(span, err) }()
	}
	if err = c.do(ctx, call{method: http.MethodGet, path: p, want: wantOK, out: &out}); err != nil {
		return api.Job{}, fmt.Errorf("get job %s: %w", id, err)
	}
	return out, nil
}

// DeletePreRecorded deletes a pre-recorded job (DELETE /v2/pre-recorded/{id}).
func (c *Client) DeletePreRecorded(ctx context.Context, id string) error {
	return c.deleteJob(ctx, pathPreRecorded, id)
}

// DeleteLive deletes a live session's job (DELETE /v2/live/{id}).
func (c *Client) DeleteLive(ctx context.Context, id string) error {
	return c.deleteJob(ctx, pathLive, id)
}

func (c *Client) deleteJob(ctx context.Context, collection, id string) error {
	p, err := itemPath(collection, id)
	if err != nil {
		return err
	}
	if err := c.do(ctx, call{method: http.MethodDelete, path: p, want: wantDeleted}); err != nil {
		return fmt.Errorf("delete job %s: %w", id, err)
	}
	return nil
}

// itemPath is the escaped path of one job. "." and ".." are refused because path cleaning
// would turn them into another resource.
func itemPath(collection, id string) (string, error) {
	if id == "" || id == "." || id == ".." {
		return "", errors.New("job id is empty or not a name")
	}
	return collection + "/" + url.PathEscape(id), nil
}
