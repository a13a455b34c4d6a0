package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
)

func TestJobsTableGolden(t *testing.T) {
	created := api.NewTime(time.Date(2026, 11, 20, 10, 4, 5, 0, time.UTC))
	jobs := []api.Job{
		{ID: "2f1c7f0e-5d0c-4c1e-9c55-0d8a3c2b1a00", Kind: api.KindPreRecorded, Status: api.StatusDone, CreatedAt: created,
			File: &api.File{Filename: "interview.mp3", AudioDuration: 754.26}},
		{ID: "live-1", Kind: api.KindLive, Status: api.StatusProcessing, CreatedAt: created},
		{ID: "e", Kind: api.KindPreRecorded, Status: api.StatusError, File: &api.File{}},
		{ID: "t", Kind: api.KindPreRecorded, Status: api.StatusQueued, CreatedAt: created,
			File: &api.File{Filename: "two\twords.wav", AudioDuration: 0.04}},
	}
	var b bytes.Buffer
	if err := writeJobsTable(&b, jobs); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"ID                                    KIND          STATUS      CREATED              DURATION  FILE\n" +
		"2f1c7f0e-5d0c-4c1e-9c55-0d8a3c2b1a00  pre-recorded  done        2026-11-20 10:04:05  12m34.3s  interview.mp3\n" +
		"live-1                                live          processing  2026-11-20 10:04:05  -         -\n" +
		"e                                     pre-recorded  error       -                    0s        -\n" +
		"t                                     pre-recorded  queued      2026-11-20 10:04:05  0s        two words.wav\n"
	if b.String() != want {
		t.Fatalf("table =\n%s\nwant\n%s", b.String(), want)
	}
}

func TestJobsTableEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := writeJobsTable(&b, nil); err != nil {
		t.Fatal(err)
	}
	if b.String() != "ID  KIND  STATUS  CREATED  DURATION  FILE\n" {
		t.Fatalf("table = %q", b.String())
	}
}

func runRemote(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return runCmd(context.Background(), nil, append([]string{"remote"}, args...)...)
}

func TestRemoteListMapsFlagsAndFollowsPages(t *testing.T) {
	t.Setenv("MY_KEY", "sk-cli")
	var fs *recorder
	fs = newRecorder(t, func(n int, r *http.Request, _ []byte) (int, string) {
		if n == 0 {
			next := fs.URL + "/v2/transcription?offset=1&limit=1&kind=live"
			return 200, `{"first":"","current":"","next":"` + next + `","items":[{"id":"a","kind":"live","status":"done","created_at":"2026-11-20T10:00:00.000Z","file":null,"request_params":null,"future":1}]}`
		}
		return 200, `{"first":"","current":"","next":null,"items":[{"id":"b","kind":"live","status":"error","created_at":"2026-11-20T10:00:00.000Z","file":null,"request_params":null}]}`
	})
	out, _, err := runRemote(t, "list", "--base-url", fs.URL, "--api-key-env", "MY_KEY", "--key-header", "x-other-key",
		"--kind", "live", "--status", "done,error", "--metadata", "user=ann", "--metadata", "team=x=y",
		"--after-date", "2026-11-01T00:00:00Z", "--limit", "1", "--all", "-o", "json")
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	first := fs.req(0)
	if first.URL.Path != "/v2/transcription" || first.Header.Get("x-other-key") != "sk-cli" {
		t.Fatalf("first request = %s key %q", first.URL, first.Header.Get("x-other-key"))
	}
	q := first.URL.Query()
	if strings.Join(q["kind"], ",") != "live" || strings.Join(q["status"], ",") != "done,error" ||
		q.Get("limit") != "1" || q.Get("after_date") != "2026-11-01T00:00:00Z" ||
		q.Get("custom_metadata") != `{"team":"x=y","user":"ann"}` || q.Has("offset") {
		t.Fatalf("query = %s", first.URL.RawQuery)
	}
	if fs.count() != 2 || fs.req(1).URL.RawQuery != "offset=1&limit=1&kind=live" {
		t.Fatalf("requests = %d", fs.count())
	}
	var jobs []map[string]any
	if err := json.Unmarshal([]byte(out), &jobs); err != nil {
		t.Fatalf("output is not a JSON array: %v\n%s", err, out)
	}
	if len(jobs) != 2 || jobs[0]["id"] != "a" || jobs[0]["future"] != float64(1) || jobs[1]["id"] != "b" {
		t.Fatalf("jobs = %v", jobs)
	}
}

func TestRemoteListOnePageHintsAtMore(t *testing.T) {
	t.Setenv(configs.DefaultAPIKeyEnv, "k")
	fs := newRecorder(t, func(int, *http.Request, []byte) (int, string) {
		return 200, `{"next":"http://elsewhere/v2/live?offset=20","items":[]}`
	})
	out, errOut, err := runRemote(t, "list", "--live", "--base-url", fs.URL)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if fs.req(0).URL.Path != "/v2/live" || fs.req(0).URL.RawQuery != "" {
		t.Fatalf("request = %s", fs.req(0).URL)
	}
	if out != "ID  KIND  STATUS  CREATED  DURATION  FILE\n" || !strings.Contains(errOut, "--all") {
		t.Fatalf("out = %q, stderr = %q", out, errOut)
	}
}

func TestRemoteCreateMergesParamsAndFlags(t *testing.T) {
	t.Setenv(configs.DefaultAPIKeyEnv, "k")
	fs := newRecorder(t, func(int, *http.Request, []byte) (int, string) {
		return 201, `{"id":"job-1","result_url":"http://svc/v2/pre-recorded/job-1"}`
	})
	params := filepath.Join(t.TempDir(), "params.json")
	writeFile(t, params, []byte(`{"audio_url":"http://a/old.wav","diarization":true,"subtitles_config":{"style":"compliance"},"extra_thing":[1]}`))
	out, _, err := runRemote(t, "create", "--base-url", fs.URL, "--params", params,
		"--audio-url", "http://a/new.wav", "--callback-url", "http://me/cb", "--language", "en,fr",
		"--subtitles-format", "vtt", "--summarization-type", "concise", "--diarization=false")
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	want := `{"audio_url":"http://a/new.wav","callback":true,"callback_config":{"url":"http://me/cb"},` +
		`"subtitles":true,"subtitles_config":{"formats":["vtt"],"style":"compliance"},"diarization":false,` +
		`"summarization":true,"summarization_config":{"type":"concise"},"language_config":{"languages":["en","fr"]},"extra_thing":[1]}`
	if fs.body(0) != want {
		t.Fatalf("body =\n%s\nwant\n%s", fs.body(0), want)
	}
	if fs.req(0).Method != http.MethodPost || fs.req(0).URL.Path != "/v2/pre-recorded" {
		t.Fatalf("request = %s %s", fs.req(0).Method, fs.req(0).URL)
	}
	if out != "ID     RESULT_URL\njob-1  http://svc/v2/pre-recorded/job-1\n" {
		t.Fatalf("out = %q", out)
	}
}

// Each on/off job flag sets its own member of the request to the value given, and only when
// given.
func TestJobSwitchesSetTheirMember(t *testing.T) {
	for flag, member := range map[string]string{
		"subtitles": "subtitles", "diarization": "diarization", "summarization": "summarization",
		"sentiment-analysis": "sentiment_analysis", "named-entity-recognition": "named_entity_recognition",
		"chapterization": "chapterization",
	} {
		for _, on := range []string{"true", "false"} {
			var jf jobFlags
			cmd := &cobra.Command{}
			jf.register(cmd)
			if err := cmd.Flags().Parse([]string{"--audio-url", "http://a/x.wav", "--" + flag + "=" + on}); err != nil {
				t.Fatal(err)
			}
			req, err := jf.request(cmd)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(req)
			if want := `{"audio_url":"http://a/x.wav","` + member + `":` + on + `}`; err != nil || string(b) != want {
				t.Errorf("--%s=%s: %s, %v; want %s", flag, on, b, err, want)
			}
		}
	}
}

func TestRemoteCreateNeedsAudioURL(t *testing.T) {
	t.Setenv(configs.DefaultAPIKeyEnv, "k")
	_, _, err := runRemote(t, "create", "--base-url", "http://127.0.0.1:1", "--diarization")
	if err == nil || !strings.Contains(err.Error(), "--audio-url is required") {
		t.Fatalf("err = %v", err)
	}
}

func TestRemoteGetPrintsServiceErrorsReadably(t *testing.T) {
	t.Setenv(configs.DefaultAPIKeyEnv, "k")
	fs := newRecorder(t, func(int, *http.Request, []byte) (int, string) {
		return 400, `{"path":"/v2/live/x","request_id":"G-1a2b3c4d","statusCode":400,"message":"invalid parameters","validation_errors":["id must be a UUID"]}`
	})
	_, _, err := runRemote(t, "get", "x", "--live", "--base-url", fs.URL)
	want := "get job x: service: 400 Bad Request: invalid parameters (request G-1a2b3c4d)\n  - id must be a UUID"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

func TestRemoteGetAndDelete(t *testing.T) {
	t.Setenv(configs.DefaultAPIKeyEnv, "k")
	fs := newRecorder(t, func(n int, r *http.Request, _ []byte) (int, string) {
		if r.Method == http.MethodDelete {
			return 202, ``
		}
		return 200, `{"id":"j1","kind":"pre-recorded","status":"done","created_at":"2026-11-20T10:00:00.000Z","file":null,"request_params":null}`
	})
	out, _, err := runRemote(t, "get", "j1", "--base-url", fs.URL, "-o", "table")
	if err != nil || !strings.Contains(out, "j1  pre-recorded  done") {
		t.Fatalf("get: %v\n%s", err, out)
	}
	out, _, err = runRemote(t, "delete", "s1", "--live", "--base-url", fs.URL)
	if err != nil || out != "deleted s1\n" {
		t.Fatalf("delete: %v %q", err, out)
	}
	if fs.req(1).Method != http.MethodDelete || fs.req(1).URL.Path != "/v2/live/s1" {
		t.Fatalf("delete request = %s %s", fs.req(1).Method, fs.req(1).URL)
	}
}

// The key may be in a file named by <variable>_FILE, as for submit and live.
func TestRemoteReadsTheKeyFromAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	writeFile(t, path, []byte("sk-file\n"))
	t.Setenv("FILE_KEY_FILE", path)
	fs := newRecorder(t, func(int, *http.Request, []byte) (int, string) { return 202, `` })
	if _, _, err := runRemote(t, "delete", "j1", "--api-key-env", "FILE_KEY", "--base-url", fs.URL); err != nil {
		t.Fatal(err)
	}
	if got := fs.req(0).Header.Get("x-service-key"); got != "sk-file" {
		t.Errorf("key sent = %q, want the file's sk-file", got)
	}
}

func TestRemoteRefusesMissingKeyAndBadFlags(t *testing.T) {
	t.Setenv("EMPTY_KEY", "")
	_, _, err := runRemote(t, "list", "--api-key-env", "EMPTY_KEY")
	if err == nil || !strings.Contains(err.Error(), "EMPTY_KEY is empty") {
		t.Fatalf("err = %v", err)
	}
	t.Setenv(configs.DefaultAPIKeyEnv, "k")
	for _, args := range [][]string{
		{"list", "--live", "--kind", "live"},
		{"list", "-o", "yaml"},
		{"list", "--metadata", "novalue"},
		{"get"},
	} {
		if _, _, err := runRemote(t, args...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
