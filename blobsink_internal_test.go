package scribehook

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/s3blob"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/testinfra"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/sinks"
	_ "github.com/scribehook/scribehook/sinks/blobsink" // the blob kind
)

// bucketObjects reads every object of the bucket at url, by key.
func bucketObjects(t *testing.T, url string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	b, err := blob.OpenBucket(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	out := map[string][]byte{}
	it := b.List(nil)
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if out[obj.Key], err = b.ReadAll(ctx, obj.Key); err != nil {
			t.Fatal(err)
		}
	}
}

// A blob sink configured in YAML, against a real S3 server (seaweedfs on loopback): a
// finished job's transcript, subtitles and raw result land under <prefix>/<job_id> with the
// bytes of the kit's own artifacts; the same events delivered again leave the bucket as it was.
func TestBlobSinkWritesTheJobToS3(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "scribehook-test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "scribehook-test-secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	srv := testinfra.Weed(t, "transcripts")
	bucketURL := "s3://transcripts?endpoint=" + srv.Endpoint + "&use_path_style=true&region=us-east-1"

	w := newWorld(t)
	ln := listen(t)
	dir := t.TempDir()
	yml := filepath.Join(dir, "scribehook.yaml")
	if err := os.WriteFile(yml, []byte(`sinks:
  - name: bucket
    kind: blob
    url: "`+bucketURL+`"
    prefix: "scribehook/{kind}"
    raw: true
    allow: [127.0.0.1]
    events: [job.succeeded, subtitles.ready]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.LoadOnto(kitConfig(dir, ln, w.sandbox), yml, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	k := startKit(t, cfg, ln, WithService(w.service))
	ctx := context.Background()
	subm, err := k.Submitter()
	if err != nil {
		t.Fatal(err)
	}
	created, err := subm.Submit(ctx, api.PreRecordedRequest{AudioURL: w.audio})
	if err != nil {
		t.Fatal(err)
	}
	jobID := created.ID
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	rec, err := WaitJob(waitCtx, k.Records(), jobID, 0, nil)
	if err != nil || rec.Job.Status != api.StatusDone {
		t.Fatalf("job: %v %s", err, rec.Job.Status)
	}

	base := "scribehook/pre-recorded/" + sinks.PathSegment(jobID) + "/"
	artifacts, err := filepath.Glob(filepath.Join(cfg.Subtitles.Dir, sinks.PathSegment(jobID), "*"))
	if err != nil || len(artifacts) < 2 {
		t.Fatalf("the kit's artifacts: %v %v", artifacts, err)
	}
	var objs map[string][]byte
	// transcript.txt, result.json, each subtitle file and the two events.
	want := len(artifacts) + 4
	testwait.For(t, "the job's objects in the bucket", 30*time.Second, func() bool {
		objs = bucketObjects(t, bucketURL)
		return len(objs) >= want
	})
	if len(objs) != want {
		t.Errorf("%d objects, want %d: %v", len(objs), want, keys(objs))
	}
	for _, a := range artifacts {
		content, err := os.ReadFile(a)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := objs[base+filepath.Base(a)]; !ok || !bytes.Equal(got, content) {
			t.Errorf("object %s: %d bytes (present %t), the artifact has %d", base+filepath.Base(a), len(got), ok, len(content))
		}
	}
	var succeeded api.Event
	for key, body := range objs {
		if strings.HasPrefix(key, base+"events/") && strings.Contains(key, "-job.succeeded-") {
			if err := json.Unmarshal(body, &succeeded); err != nil {
				t.Fatal(err)
			}
		}
	}
	if succeeded.JobID != jobID {
		t.Fatalf("no job.succeeded event object under %s: %v", base, keys(objs))
	}
	text, err := sinks.TranscriptText(succeeded.Data)
	if err != nil || text == "" || string(objs[base+"transcript.txt"]) != text {
		t.Errorf("transcript.txt %q, want %q (%v)", objs[base+"transcript.txt"], text, err)
	}
	if !strings.Contains(text, "Speaker 0: Welcome to scribehook") {
		t.Errorf("transcript %q", text)
	}
	var result api.Result
	if err := json.Unmarshal(objs[base+"result.json"], &result); err != nil || result.Transcription == nil ||
		result.Transcription.FullTranscript != apiResultText(t, rec.Job) {
		t.Errorf("result.json %.200s: %v", objs[base+"result.json"], err)
	}

	// The same events again, through a sink of the same configuration: the same keys, the
	// same bytes.
	s, err := sinks.New(SinkSpecs(cfg, configs.Secrets{})[len(cfg.Sinks)-1], sinks.Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for key, body := range objs {
		if !strings.Contains(key, "/events/") {
			continue
		}
		var ev api.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Fatal(err)
		}
		if err := s.Deliver(ctx, ev); err != nil {
			t.Fatalf("deliver %s again: %v", ev.Type, err)
		}
	}
	again := bucketObjects(t, bucketURL)
	if len(again) != len(objs) {
		t.Errorf("%d objects after the repeat, %d before: %v", len(again), len(objs), keys(again))
	}
	for key, body := range objs {
		if !bytes.Equal(again[key], body) {
			t.Errorf("object %s changed on the repeat", key)
		}
	}
}

// apiResultText is the full transcript of a finished job's result.
func apiResultText(t *testing.T, job api.Job) string {
	t.Helper()
	r, err := job.DecodeResult()
	if err != nil || r.Transcription == nil {
		t.Fatalf("job result: %v", err)
	}
	return r.Transcription.FullTranscript
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
