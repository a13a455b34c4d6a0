package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/submitter"
)

// startSandboxCmd runs `scribehook sandbox` with args on a free loopback port and returns a
// client of it; the command stops with the test.
func startSandboxCmd(t *testing.T, args ...string) (*submitter.Client, *sandboxtest.Buffer) {
	t.Helper()
	addr := "127.0.0.1:" + freePort(t)
	const key = "sandbox-fetch-test-key"
	logs := &sandboxtest.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := startCmd(ctx, nil, logs, logs, append([]string{"sandbox", "--listen", addr, "--api-key", key}, args...)...)
	t.Cleanup(func() {
		cancel()
		_ = waitEnded(t, done, 10*time.Second)
	})
	waitServing(t, "http://"+addr+"/healthz", done, logs)
	client, err := submitter.New("http://"+addr, key)
	if err != nil {
		t.Fatal(err)
	}
	return client, logs
}

func runSandboxJob(t *testing.T, client *submitter.Client, audioURL string) api.Job {
	t.Helper()
	created, err := client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: audioURL})
	if err != nil {
		t.Fatal(err)
	}
	var job api.Job
	testwait.For(t, "job "+created.ID+" to finish", 20*time.Second, func() bool {
		if job, err = client.GetPreRecorded(context.Background(), created.ID); err != nil {
			t.Fatal(err)
		}
		return job.Status.Final()
	})
	return job
}

// `scribehook sandbox` refuses audio on loopback unless --allow-fetch covers it, and caps it
// with --max-fetch-bytes.
func TestSandboxCommandAllowFetch(t *testing.T) {
	audioURL := sandboxtest.NewFiles(t, sandboxtest.DemoSample(t)).AudioURL

	failed := func(job api.Job) bool {
		return job.Status == api.StatusError && job.ErrorCode != nil && *job.ErrorCode == 400 &&
			strings.Contains(string(job.PostSessionMetadata), `"audio_url could not be fetched"`)
	}

	closedSandbox, logs := startSandboxCmd(t)
	if job := runSandboxJob(t, closedSandbox, audioURL); !failed(job) {
		t.Errorf("without --allow-fetch: status %s code %v %s, want 400 audio_url could not be fetched", job.Status, job.ErrorCode, job.PostSessionMetadata)
	}
	if !strings.Contains(logs.String(), "refused unless allow-listed") {
		t.Errorf("the log does not say why:\n%s", logs.String())
	}

	open, _ := startSandboxCmd(t, "--allow-fetch", "10.0.0.0/8", "--allow-fetch", "127.0.0.0/8")
	if job := runSandboxJob(t, open, audioURL); job.Status != api.StatusDone {
		t.Errorf("with --allow-fetch 127.0.0.0/8: status %s code %v %s, want done", job.Status, job.ErrorCode, job.PostSessionMetadata)
	}

	capped, _ := startSandboxCmd(t, "--allow-fetch", "127.0.0.1", "--max-fetch-bytes", "1000")
	if job := runSandboxJob(t, capped, audioURL); !failed(job) {
		t.Errorf("with --max-fetch-bytes 1000: status %s code %v %s, want 400 audio_url could not be fetched", job.Status, job.ErrorCode, job.PostSessionMetadata)
	}

	for _, bad := range [][]string{{"--allow-fetch", "localhost"}, {"--allow-fetch", "10.0.0.0/33"}, {"--max-fetch-bytes", "0"},
		{"--max-upload-store-bytes", "0"}, {"--upload-ttl", "0s"}} {
		if _, _, err := runCmd(context.Background(), nil, append([]string{"sandbox", "--listen", "127.0.0.1:0", "--api-key", "k"}, bad...)...); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("sandbox %v = %v, want an error naming %s", bad, err, bad[0])
		}
	}
}

// `scribehook sandbox` calls back a receiver on loopback only when --allow-fetch covers it, as
// it fetches: the callback's URL is chosen by whoever creates the job too.
func TestSandboxCommandCallbacksNeedTheAllowance(t *testing.T) {
	audioURL := sandboxtest.NewFiles(t, sandboxtest.DemoSample(t)).AudioURL
	var got atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { got.Add(1) }))
	t.Cleanup(receiver.Close)
	create := func(client *submitter.Client) {
		t.Helper()
		_, err := client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{
			AudioURL: audioURL, Callback: api.Bool(true), CallbackConfig: &api.CallbackConfig{URL: receiver.URL + "/hook"},
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	closedSandbox, logs := startSandboxCmd(t)
	create(closedSandbox)
	testwait.For(t, "the callback to be refused", 20*time.Second, func() bool {
		s := logs.String()
		return strings.Contains(s, "callback attempt failed") && strings.Contains(s, "refused unless allow-listed")
	})
	if n := got.Load(); n != 0 {
		t.Errorf("without --allow-fetch the receiver got %d requests, want none", n)
	}

	open, _ := startSandboxCmd(t, "--allow-fetch", "127.0.0.0/8")
	create(open)
	testwait.For(t, "the callback with --allow-fetch 127.0.0.0/8", 20*time.Second, func() bool { return got.Load() == 1 })
}
