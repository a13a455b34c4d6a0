package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/testinfra"
	"github.com/scribehook/scribehook/internal/testwait"
)

// s3Objects reads every object of bucket on srv, signed with keys, by key.
func s3Objects(t *testing.T, srv *testinfra.S3Server, keys testinfra.S3Keys, bucket string) map[string]string {
	t.Helper()
	ctx := context.Background()
	client := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(keys.AccessKeyID, keys.SecretAccessKey, ""),
	})
	out := map[string]string{}
	list, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range list.Contents {
		obj, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(obj.Body)
		obj.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[*o.Key] = string(b)
	}
	return out
}

// TestServeBlobAndExpressionsFromYAML runs serve with the sinks of issue 26 as a user writes
// them in YAML: a blob sink on a real S3 server (seaweedfs on loopback) with its own keys (the
// AWS_* variables of the process hold other ones) and a when expression, a second blob sink
// whose secret is wrong, and a webhook with when, body and headers. Of two finished jobs, only
// the one longer than a minute reaches the bucket and the webhook, the webhook gets the
// projected body and the headers; the wrong secret dead-letters without being quoted.
// Expressions that do not compile stop serve at load with the sink's name.
func TestServeBlobAndExpressionsFromYAML(t *testing.T) {
	keys := testinfra.S3Keys{AccessKeyID: "scribehook-serve", SecretAccessKey: "serve-secret-8d2e71"}
	srv := testinfra.WeedWithKeys(t, "archive", keys)
	t.Setenv("AWS_ACCESS_KEY_ID", "not-the-sinks")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-sinks-either")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("TEST_S3_KEY", keys.AccessKeyID)
	t.Setenv("TEST_S3_SECRET", keys.SecretAccessKey)
	t.Setenv("TEST_S3_WRONG", "wrong-secret-0c91f4")
	t.Setenv("TEST_PARTNER_TOKEN", partnerToken)
	t.Setenv("SCRIBEHOOK_API_KEY", "")
	readToken := "cmVhZC10b2tlbi1mb3ItYmxvYi10ZXN0cy0wNDI"
	t.Setenv("SCRIBEHOOK_READ_TOKEN", readToken)

	hook := newRecorder(t, func(int, *http.Request, []byte) (int, string) { return http.StatusNoContent, "" })
	dir, db := tempDB(t)
	addr := "127.0.0.1:" + freePort(t)
	bucketURL := "s3://archive?endpoint=" + srv.Endpoint + "&use_path_style=true&region=us-east-1"
	sinksYAML := []string{
		"sinks:\n",
		"  - name: archive\n",
		"    kind: blob\n",
		fmt.Sprintf("    url: %q\n", bucketURL),
		"    allow: [127.0.0.1]\n",
		"    access_key_env: TEST_S3_KEY\n",
		"    secret_key_env: TEST_S3_SECRET\n",
		"    prefix: \"transcripts/{kind}\"\n",
		"    raw: true\n",
		"    events: [job.succeeded]\n",
		"    when: 'event.data.result.metadata.audio_duration > 60.0'\n",
		"  - name: wrongkeys\n",
		"    kind: blob\n",
		fmt.Sprintf("    url: %q\n", bucketURL),
		"    allow: [127.0.0.1]\n",
		"    access_key_env: TEST_S3_KEY\n",
		"    secret_key_env: TEST_S3_WRONG\n",
		"    retry: [0s]\n",
		"    events: [job.succeeded]\n",
		"  - name: captions\n",
		"    kind: webhook\n",
		fmt.Sprintf("    url: %q\n", hook.URL),
		"    allow: [127.0.0.0/8]\n",
		"    events: [job.succeeded]\n",
		"    when: 'event.type == \"job.succeeded\" && event.data.result.metadata.audio_duration > 60.0'\n",
		"    body: '{\"id\": event.job_id, \"text\": event.data.result.transcription.full_transcript}'\n",
		"    headers:\n",
		"      X-Job: 'event.job_id'\n",
		"      X-Languages: 'event.data.result.transcription.languages.join(\",\")'\n",
	}
	path := writeSQLiteConfig(t, dir, db, append([]string{"listen: " + addr + "\n",
		fmt.Sprintf("subtitles: {dir: %q}\n", filepath.Join(dir, "artifacts")),
		"routes: [{name: partner, token_env: TEST_PARTNER_TOKEN}]\n"}, sinksYAML...)...)
	s := startServe(t, path, addr)
	base := "http://" + addr
	for _, job := range []struct {
		id       string
		duration float64
	}{{"job-long", 90.5}, {"job-short", 30}} {
		body := fmt.Sprintf(`{"id":%q,"event":"transcription.success","payload":{"metadata":{"audio_duration":%v},`+
			`"transcription":{"full_transcript":"words of %s","languages":["en","fr"],"utterances":[`+
			`{"start":0.5,"end":1.5,"channel":0,"speaker":0,"language":"en","text":"words of %s","words":[]}]}}}`,
			job.id, job.duration, job.id, job.id)
		status, b := httpDo(t, http.MethodPost, base+"/v1/callbacks/"+partnerToken, http.Header{"Content-Type": {"application/json"}}, []byte(body))
		if status != http.StatusOK {
			t.Fatalf("callback %s: %d %s", job.id, status, b)
		}
	}

	// The bucket: the long job's transcript, raw result and event, nothing of the short one.
	var objs map[string]string
	testwait.For(t, "the long job's objects", 30*time.Second, func() bool {
		objs = s3Objects(t, srv, keys, "archive")
		return len(objs) >= 3
	})
	prefix := "transcripts/pre-recorded/job-long/"
	if got := objs[prefix+"transcript.txt"]; got != "[00:00:00.5 → 00:00:01.5] Speaker 0: words of job-long\n" {
		t.Errorf("transcript.txt = %q", got)
	}
	var result api.Result
	if err := json.Unmarshal([]byte(objs[prefix+"result.json"]), &result); err != nil || result.Metadata.AudioDuration != 90.5 ||
		result.Transcription == nil || result.Transcription.FullTranscript != "words of job-long" {
		t.Errorf("result.json = %.300s (%v)", objs[prefix+"result.json"], err)
	}
	var eventKey string
	for k := range objs {
		if strings.HasPrefix(k, prefix+"events/") && strings.Contains(k, "-job.succeeded-") {
			eventKey = k
		}
	}
	var ev api.Event
	if err := json.Unmarshal([]byte(objs[eventKey]), &ev); err != nil || ev.JobID != "job-long" || ev.Type != api.EventJobSucceeded {
		t.Errorf("event object %q: %+v (%v)", eventKey, ev, err)
	}
	for k := range objs {
		if !strings.HasPrefix(k, prefix) {
			t.Errorf("object %s: only the long job's objects belong in the bucket", k)
		}
	}
	if len(objs) != 3 {
		t.Errorf("%d objects, want 3", len(objs))
	}

	// The webhook: one request, the long job's, with the projected body and the headers.
	testwait.For(t, "the webhook's delivery", 30*time.Second, func() bool { return hook.count() >= 1 })
	if got := hook.body(0); got != `{"id":"job-long","text":"words of job-long"}` {
		t.Errorf("webhook body = %s", got)
	}
	if r := hook.req(0); r.Header.Get("X-Job") != "job-long" || r.Header.Get("X-Languages") != "en,fr" || r.Header.Get("webhook-id") != ev.ID {
		t.Errorf("webhook headers: X-Job %q, X-Languages %q, webhook-id %q (want %s)", r.Header.Get("X-Job"),
			r.Header.Get("X-Languages"), r.Header.Get("webhook-id"), ev.ID)
	}

	// The wrong secret: both jobs dead-lettered after their one attempt, the server's refusal
	// in the error, the secret nowhere.
	var dead []struct {
		JobID     string `json:"job_id"`
		Attempts  int    `json:"attempts"`
		LastError string `json:"last_error"`
	}
	auth := http.Header{"Authorization": {"Bearer " + readToken}}
	testwait.For(t, "the wrong keys' dead letters", 30*time.Second, func() bool {
		getJSON(t, base+"/v1/deadletters?sink=wrongkeys", auth, &dead)
		return len(dead) >= 2
	})
	for _, d := range dead {
		if d.Attempts != 1 || !strings.Contains(d.LastError, "403") || strings.Contains(d.LastError, "wrong-secret-0c91f4") {
			t.Errorf("dead letter of %s: %d attempts, %q", d.JobID, d.Attempts, d.LastError)
		}
	}
	time.Sleep(300 * time.Millisecond) // anything wrongly let through would have arrived by now
	if n := hook.count(); n != 1 {
		t.Errorf("the webhook got %d requests, want 1", n)
	}
	if strings.Contains(s.logs.String(), keys.SecretAccessKey) || strings.Contains(s.logs.String(), "wrong-secret-0c91f4") {
		t.Error("serve's log shows a secret key")
	}
	s.stop(t)

	// Expressions that do not compile: serve stops at load, naming the sink and the key.
	for _, tc := range []struct{ line, want string }{
		{"    when: 'event.job_id + \"x\"'\n", "sinks[0] (archive).when does not compile: must give a bool, gives string"},
		{"    when: 'event.type == '\n", "sinks[0] (archive).when does not compile: ERROR: <input>:1:15: Syntax error"},
		{"    when: 'event.tpye == \"job.succeeded\"'\n", "sinks[0] (archive).when does not compile: event has no field 'tpye'"},
	} {
		bad := append([]string(nil), sinksYAML[:11]...)
		bad[10] = tc.line
		path := writeSQLiteConfig(t, dir, db, append([]string{"listen: " + addr + "\n"}, bad...)...)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, stderr, err := runCmd(ctx, nil, "--config", path, "serve")
		cancel()
		if err == nil || !strings.Contains(err.Error()+stderr, tc.want) {
			t.Errorf("serve with %s: %v\n%s\nwant %q", strings.TrimSpace(tc.line), err, stderr, tc.want)
		}
	}
}
