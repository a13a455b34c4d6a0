package scribehook

import (
	"bytes"
	"context"
	"testing"

	"github.com/scribehook/scribehook/api"
)

// Submit answers with the service's answer, as StartLive does, and takes the callback's
// method from the request's callback_config: PUT is kept, GET is refused before anything is
// created.
func TestSubmitAnswersAndTakesTheMethodFromTheRequest(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	ln := listen(t)
	k := startKit(t, kitConfig(dir, ln, w.sandbox), ln)
	sub, err := k.Submitter()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	created, err := sub.Submit(ctx, api.PreRecordedRequest{AudioURL: w.audio, CallbackConfig: &api.CallbackConfig{Method: "PUT"}})
	if err != nil || created.ID == "" {
		t.Fatalf("Submit = %+v, %v", created, err)
	}
	rec, err := k.Records().GetJob(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(rec.Job.RequestParams, []byte(`"method":"PUT"`)) {
		t.Errorf("the job was created with %s, want callback_config.method PUT", rec.Job.RequestParams)
	}
	if _, err := sub.Submit(ctx, api.PreRecordedRequest{AudioURL: w.audio, CallbackConfig: &api.CallbackConfig{Method: "GET"}}); err == nil ||
		err.Error() != `callback_config.method "GET": use POST or PUT` {
		t.Errorf("Submit with GET: %v", err)
	}
}
