package blobsink_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/testinfra"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/sinks/blobsink"
)

func event(typ string, data any) api.Event {
	raw, _ := json.Marshal(data)
	return api.Event{ID: "evt-1", Type: typ, JobID: "job/1", Kind: api.KindPreRecorded,
		CreatedAt: api.Time{Time: time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)}, Data: raw}
}

// The objects of each event, their keys and bytes, on a file bucket: the same layout as the
// file sink's, under the prefix with {kind} replaced.
func TestKeysAndBytes(t *testing.T) {
	dir := t.TempDir()
	s, err := sinks.New(sinks.Spec{Name: "b", Kind: blobsink.Kind, URL: "file://" + dir, Prefix: "/archive/{kind}/", Raw: true},
		sinks.Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	result := json.RawMessage(`{"transcription":{"full_transcript":"hi","utterances":[{"start":1,"end":2,"channel":0,"text":"hi"}]}}`)
	succeeded := event(api.EventJobSucceeded, map[string]any{"id": "job/1", "result": result})
	subs := event(api.EventSubtitlesReady, sinks.SubtitlesReadyData{JobID: "job/1", Files: []sinks.SubtitleFile{
		{Format: "vtt", Language: "en", Name: "subtitles.en.vtt", Content: "WEBVTT\n\n1\n"},
		{Format: "srt", Language: "fr", Name: "subtitles.fr.srt", Content: "1\n00:00:01,000 --> 00:00:02,000\nsalut\n"},
	}})
	subs.ID = "evt-2"
	for _, ev := range []api.Event{succeeded, subs, succeeded} {
		if err := s.Deliver(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	base := filepath.Join(dir, "archive", "pre-recorded", "job%2F1")
	enc := func(ev api.Event) string { b, _ := api.EncodeEvent(&ev, false); return string(b) }
	for name, want := range map[string]string{
		"transcript.txt":   "[00:00:01.0 → 00:00:02.0] Speaker 0: hi\n",
		"result.json":      string(result),
		"subtitles.en.vtt": "WEBVTT\n\n1\n",
		"subtitles.fr.srt": "1\n00:00:01,000 --> 00:00:02,000\nsalut\n",
		"events/20261129T070000.000Z-job.succeeded-evt-1.json":   enc(succeeded),
		"events/20261129T070000.000Z-subtitles.ready-evt-2.json": enc(subs),
	} {
		got, err := os.ReadFile(filepath.Join(base, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	// Each object names the event that wrote it.
	b, err := blob.OpenBucket(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for key, id := range map[string]string{"archive/pre-recorded/job%2F1/subtitles.en.vtt": "evt-2", "archive/pre-recorded/job%2F1/transcript.txt": "evt-1"} {
		attrs, err := b.Attributes(context.Background(), key)
		if err != nil || attrs.Metadata[blobsink.MetadataEventID] != id {
			t.Errorf("%s metadata %v, %v; want %s=%s", key, attrs, err, blobsink.MetadataEventID, id)
		}
	}
	var files []string
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && !strings.HasSuffix(p, ".attrs") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 6 {
		t.Errorf("%d objects, want 6 (the repeat writes the same keys): %v", len(files), files)
	}
}

// Events that can never be written fail permanently, naming why.
func TestPermanentFailures(t *testing.T) {
	s, err := blobsink.New(sinks.Spec{Name: "b", Kind: blobsink.Kind, URL: "file://" + t.TempDir()}, sinks.Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	noJob := event(api.EventJobCreated, map[string]any{})
	noJob.JobID = ""
	bad := event(api.EventSubtitlesReady, sinks.SubtitlesReadyData{Files: []sinks.SubtitleFile{{Name: "../x"}}})
	reserved := event(api.EventSubtitlesReady, sinks.SubtitlesReadyData{Files: []sinks.SubtitleFile{{Name: "result.json"}}})
	for ev, msg := range map[*api.Event]string{&noJob: "no job id", &bad: "not a plain file name", &reserved: "reserved"} {
		err := s.Deliver(context.Background(), *ev)
		if err == nil || !sinks.AsFailure(err).Permanent || !strings.Contains(err.Error(), msg) {
			t.Errorf("Deliver = %v, want a permanent failure saying %q", err, msg)
		}
	}
}

// The kind's spec errors name the Spec field; none quotes a URL's query.
func TestNewErrors(t *testing.T) {
	for _, tt := range []struct {
		url, prefix string
		field, msg  string
	}{
		{"", "", "URL", "is required for a blob sink"},
		{"s3://AKIA:secret@bucket", "", "URL", "must not carry credentials"},
		{"gs://bucket", "", "URL", "gs:// is not linked"},
		{"ftp://x/y", "", "URL", `got scheme "ftp"`},
		{"file://relative/dir", "", "URL", "file:///absolute/directory"},
		{"s3://bucket?endpoint=http://u:p@127.0.0.1:9000", "", "URL", "without credentials"},
		{"s3://bucket?region=x&token=hush", "", "URL", `query parameter "token" is not one this sink reads`},
		{"file:///tmp/x", "a/../b", "Prefix", ".. segment"},
	} {
		_, err := sinks.New(sinks.Spec{Name: "x", Kind: blobsink.Kind, URL: tt.url, Prefix: tt.prefix}, sinks.Deps{Logger: logx.Discard()})
		var se *sinks.SpecError
		if !errors.As(err, &se) || se.Field != tt.field || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("New(%q, %q) = %v, want a SpecError on %s saying %q", tt.url, tt.prefix, err, tt.field, tt.msg)
		}
		if err != nil && (strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "hush")) {
			t.Errorf("error quotes a secret: %v", err)
		}
	}
}

// An S3 endpoint on a private address is refused at dial time unless allow names it, and the
// refusal is permanent (retrying changes nothing until the configuration does).
func TestS3EndpointThroughTheGuard(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	url := "s3://b?endpoint=http://127.0.0.1:" + testinfra.Port(t) + "&use_path_style=true&region=us-east-1"
	s, err := blobsink.New(sinks.Spec{Name: "b", Kind: blobsink.Kind, URL: url}, sinks.Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = s.Deliver(ctx, event(api.EventJobCreated, map[string]any{}))
	var blocked *sinks.BlockedAddressError
	if !errors.As(err, &blocked) || !sinks.AsFailure(err).Permanent {
		t.Errorf("Deliver to 127.0.0.1 without allow = %v, want a permanent BlockedAddressError", err)
	}
	if strings.Contains(err.Error(), "use_path_style") {
		t.Errorf("error quotes the URL's query: %v", err)
	}

	allowed, err := blobsink.New(sinks.Spec{Name: "b", Kind: blobsink.Kind, URL: url, Allow: []string{"127.0.0.1"}}, sinks.Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer allowed.Close()
	err = allowed.Deliver(ctx, event(api.EventJobCreated, map[string]any{}))
	if err == nil || errors.As(err, &blocked) || sinks.AsFailure(err).Permanent {
		t.Errorf("Deliver to a closed allowed port = %v, want a retryable error", err)
	}
}

// A sink's own keys are the only ones it signs with: against a server with one identity, the
// right keys write (whatever AWS_* says), a wrong secret is refused without being quoted, and
// keys that come half are a spec error.
func TestStaticKeys(t *testing.T) {
	keys := testinfra.S3Keys{AccessKeyID: "scribehook-blob", SecretAccessKey: "blob-secret-4f1c9a"}
	srv := testinfra.WeedWithKeys(t, "keyed", keys)
	// The SDK's own sources hold other keys: the sink must not read them.
	t.Setenv("AWS_ACCESS_KEY_ID", "someone-else")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "someone-elses-secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	url := "s3://keyed?endpoint=" + srv.Endpoint + "&use_path_style=true&region=us-east-1"
	deliver := func(k sinks.StaticKeys) error {
		s, err := blobsink.New(sinks.Spec{Name: "b", Kind: blobsink.Kind, URL: url, Allow: []string{"127.0.0.1"}, Keys: k},
			sinks.Deps{Logger: logx.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return s.Deliver(ctx, event(api.EventJobCreated, map[string]any{}))
	}
	if err := deliver(sinks.StaticKeys{AccessKeyID: keys.AccessKeyID, SecretAccessKey: keys.SecretAccessKey}); err != nil {
		t.Fatalf("with the server's keys: %v", err)
	}
	err := deliver(sinks.StaticKeys{AccessKeyID: keys.AccessKeyID, SecretAccessKey: "wrong-secret-77"})
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("with a wrong secret: %v, want a 403", err)
	}
	if err != nil && strings.Contains(err.Error(), "wrong-secret-77") {
		t.Errorf("the error quotes the secret: %v", err)
	}
	if err := deliver(sinks.StaticKeys{}); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("with the environment's other keys: %v, want a 403", err)
	}
	for _, k := range []sinks.StaticKeys{{AccessKeyID: "a"}, {SecretAccessKey: "s"}, {SessionToken: "t"}} {
		_, err := blobsink.New(sinks.Spec{Name: "b", Kind: blobsink.Kind, URL: url, Keys: k}, sinks.Deps{Logger: logx.Discard()})
		var se *sinks.SpecError
		if !errors.As(err, &se) || se.Field != "Keys" {
			t.Errorf("keys %v: %v, want a SpecError on Keys", k, err)
		}
	}
	if got := fmt.Sprintf("%v %+v %#v", sinks.StaticKeys{AccessKeyID: "AKIAEXAMPLE1", SecretAccessKey: "s3cr3tvalue"},
		sinks.StaticKeys{SecretAccessKey: "s3cr3tvalue"}, sinks.StaticKeys{SessionToken: "t0kenvalue"}); got !=
		"access_key:set,secret_key:set,session_token:unset access_key:unset,secret_key:set,session_token:unset "+
			"sinks.StaticKeys{access_key:unset,secret_key:unset,session_token:set}" {
		t.Errorf("StaticKeys prints its values: %s", got)
	}
}
