// Package exampletest is the end-to-end test that every example program under examples/ passes:
// the same flags, routes and output lines, whatever web framework the program is written with.
// Each example keeps its own program whole, to be read on its own; what its test does is the
// same for all of them, so it is written once here, and an example's test names only what is
// its own (its directory, its name, its own route's answer).
//
// The examples are modules of their own that replace the kit with this checkout; their import
// paths lie under github.com/scribehook/scribehook, so Go lets them import this package.
package exampletest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/sandbox"
)

// Program is an example program: a main package that mounts the kit under /hooks and serves
// GET /hello and POST /transcribe?audio_url=URL of its own.
type Program struct {
	Dir        string   // the main package's directory ("." from its own test)
	Name       string   // the program's name, in the keys the test gives it
	BuildFlags []string // flags of its build (-race under the race detector)
	Hello      string   // what its GET /hello answers
}

// EndToEnd builds p and runs it as a subprocess against a sandbox of the service and a file
// server on loopback: a job submitted through its own endpoint comes back as a callback under
// /hooks, its Go handler prints the transcript the sidecar fixes, the read API under /hooks
// serves the job, a bad callback token is refused, the program's own route still answers, and
// SIGTERM stops it cleanly.
func EndToEnd(t *testing.T, p Program) {
	t.Helper()
	began := time.Now()
	testKey, readToken := p.Name+"-test-key", p.Name+"-read-token"
	w := sandboxtest.NewWorld(t, sandbox.Config{APIKey: testKey, Callbacks: sandboxtest.QuickRetries},
		sandboxtest.DemoSample(t))

	dir := t.TempDir()
	// The test's environment without the variables the program reads, so that a developer's own
	// settings cannot change what is tested.
	env := append(sandboxtest.EnvWithout("SCRIBEHOOK_", "LISTEN_ADDR="),
		"SCRIBEHOOK_API_KEY="+testKey, "SCRIBEHOOK_READ_TOKEN="+readToken)
	prog := sandboxtest.RunProgram(t, p.Dir, p.BuildFlags, []string{
		"-listen", "127.0.0.1:0", // the program derives public_url from the port it got
		"-service-url", w.Service.URL,
		"-store", filepath.Join(dir, "app.db"),
		"-artifacts", filepath.Join(dir, "artifacts"),
	}, env)
	built := time.Now()

	base := prog.Wait(t, "the address line", 30*time.Second, func(all []string) (string, bool) {
		for _, l := range all {
			if rest, ok := strings.CutPrefix(l, "listening on "); ok {
				return strings.Fields(rest)[0], true // http://127.0.0.1:port
			}
		}
		return "", false
	})
	do := sandboxtest.Do

	// Submit through the program's own endpoint.
	resp, body := do(t, http.MethodPost, base+"/transcribe?audio_url="+url.QueryEscape(w.Files.AudioURL), "", nil)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /transcribe: %d %s", resp.StatusCode, body)
	}
	var created struct{ ID string }
	if err := json.Unmarshal(body, &created); err != nil || created.ID == "" {
		t.Fatalf("POST /transcribe answered %s (%v)", body, err)
	}

	// The Go handler saw job.succeeded: its first utterance is the sidecar's.
	header := "job " + created.ID + " succeeded, "
	first := prog.Wait(t, "the handler's transcript", 60*time.Second, func(all []string) (string, bool) {
		for i, l := range all {
			if strings.HasPrefix(l, header) && i+1 < len(all) {
				_, text, ok := strings.Cut(all[i+1], "] ")
				return text, ok
			}
		}
		return "", false
	})
	if first != "Welcome to scribehook" {
		t.Errorf("first utterance printed by the handler: %q, want %q", first, "Welcome to scribehook")
	}
	handled := time.Now()

	// The read API under /hooks serves the job, done, with its result; only with the token.
	resp, body = do(t, http.MethodGet, base+"/hooks/v1/jobs/"+created.ID, "Bearer "+readToken, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /hooks/v1/jobs/%s: %d %s", created.ID, resp.StatusCode, body)
	}
	var job struct {
		ID     string
		Status string
		Result struct {
			Transcription struct {
				Utterances []struct{ Text string }
			}
		}
	}
	if err := json.Unmarshal(body, &job); err != nil {
		t.Fatalf("job: %v: %s", err, body)
	}
	if job.ID != created.ID || job.Status != "done" {
		t.Errorf("read API: job %q status %q, want %q done", job.ID, job.Status, created.ID)
	}
	if u := job.Result.Transcription.Utterances; len(u) == 0 || u[0].Text != "Welcome to scribehook" {
		t.Errorf("read API: utterances %+v", u)
	}
	if resp, body := do(t, http.MethodGet, base+"/hooks/v1/jobs/"+created.ID, "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("read API without a token: %d %s, want 401", resp.StatusCode, body)
	}

	// A callback with a token the kit never minted is refused.
	resp, body = do(t, http.MethodPost, base+"/hooks/v1/callbacks/not-a-token", "", []byte(`{"id":"x","event":"transcription.success"}`))
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("callback with a bad token: %d %s, want 401", resp.StatusCode, body)
	}

	// The program's own routes still answer, and the kit's health beside them.
	if resp, body := do(t, http.MethodGet, base+"/hello", "", nil); resp.StatusCode != http.StatusOK || string(body) != p.Hello {
		t.Errorf("GET /hello: %d %q, want 200 %q", resp.StatusCode, body, p.Hello)
	}
	if resp, body := do(t, http.MethodGet, base+"/hooks/healthz", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /hooks/healthz: %d %s", resp.StatusCode, body)
	}

	// SIGTERM: the server stops, then the kit, and the program exits 0.
	if err := prog.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	prog.Wait(t, "the stop line", 5*time.Second, func(all []string) (string, bool) {
		return "", len(all) > 0 && all[len(all)-1] == "stopped"
	})
	t.Logf("build %v, start to handled job %v, total %v",
		built.Sub(began).Round(time.Millisecond), handled.Sub(built).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}
