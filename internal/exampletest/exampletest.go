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
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/sandbox"
)

// Program is an example program: a main package that mounts the kit under /hooks and serves
// GET /hello and POST /transcribe?audio_url=URL of its own, the latter only with the bearer
// token in APP_TOKEN and for an audio_url of an origin listed in AUDIO_ORIGINS.
type Program struct {
	Dir        string   // the main package's directory ("." from its own test)
	Name       string   // the program's name, in the keys the test gives it
	BuildFlags []string // flags of its build (-race under the race detector)
	Hello      string   // what its GET /hello answers
}

// EndToEnd builds p and runs it as a subprocess against a sandbox of the service and a file
// server on loopback: its own endpoint refuses a request without the app's token or with
// another (401) and an audio_url of an origin it does not list (400), and submits nothing for
// either; a job submitted with the token and the file server's URL comes back as a callback
// under /hooks, its Go handler prints the transcript the sidecar fixes, the read API under
// /hooks serves the job, a bad callback token is refused, the program's own route still
// answers, and SIGTERM stops it cleanly.
func EndToEnd(t *testing.T, p Program) {
	t.Helper()
	began := time.Now()
	testKey, readToken := p.Name+"-test-key", p.Name+"-read-token"
	w := sandboxtest.NewWorld(t, sandbox.Config{APIKey: testKey, Callbacks: sandboxtest.QuickRetries},
		sandboxtest.DemoSample(t))

	dir := t.TempDir()
	// The test's environment without the variables the program reads, so that a developer's own
	// settings cannot change what is tested. The file server's origin is listed (http, as the
	// list says, so that the sandbox fetches from loopback), and allowed.example, which only
	// the refusals below name: nothing here ever dials it.
	env := append(cleanEnv(),
		"SCRIBEHOOK_API_KEY="+testKey, "SCRIBEHOOK_READ_TOKEN="+readToken,
		"APP_TOKEN="+appToken, "AUDIO_ORIGINS="+w.Files.URL+", https://allowed.example")
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
	transcribe := func(audioURL string) string { return base + "/transcribe?audio_url=" + url.QueryEscape(audioURL) }

	// Without the app's token, or with anything else, the endpoint that spends the service key
	// answers 401 with a Bearer challenge, and its body repeats neither token.
	wrong := strings.Repeat("x", len(appToken))
	for _, auth := range []string{"", "Bearer", "Bearer " + wrong, "Bearer " + appToken[:len(appToken)-1],
		"Bearer " + appToken + "x", "Basic " + appToken, "Bearer  " + appToken + " x"} {
		resp, body := do(t, http.MethodPost, transcribe(w.Files.AudioURL), auth, nil)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST /transcribe with Authorization %q: %d %s, want 401", auth, resp.StatusCode, body)
			continue
		}
		if ch := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, "Bearer") {
			t.Errorf("POST /transcribe with Authorization %q: WWW-Authenticate %q, want a Bearer challenge", auth, ch)
		}
		if strings.Contains(string(body), appToken[:22]) || strings.Contains(string(body), wrong[:22]) {
			t.Errorf("POST /transcribe with Authorization %q: the answer repeats a token: %s", auth, body)
		}
	}

	// With the token, an audio_url the program does not list is refused before anything is
	// submitted: the service would fetch it with this program's key. None of these is dialled;
	// every name is under a reserved top-level domain (.example, .test: RFC 2606), so that even
	// a program that let them through would send the sandbox nowhere.
	filesHTTPS := "https" + strings.TrimPrefix(w.Files.AudioURL, "http")
	for _, audioURL := range []string{
		"",
		"http://169.254.169.254/latest/meta-data/",   // cloud metadata
		"https://evil.example/a.wav",                 // not listed
		"https://allowed.example.evil.test/a.wav",    // a listed origin as a prefix of the host
		"https://evil.test/allowed.example/a.wav",    // and in the path
		"https://user@allowed.example/a.wav",         // userinfo
		"https://allowed.example@evil.example/a.wav", // the listed host as userinfo
		"https://allowed.example:8443/a.wav",         // another port
		"http://allowed.example/a.wav",               // listed as https only
		"ftp://allowed.example/a.wav",                // not http(s)
		filesHTTPS,                                   // the file server is listed as http only
		"allowed.example/a.wav",                      // not absolute
		"https:///a.wav",                             // no host
	} {
		resp, body := do(t, http.MethodPost, transcribe(audioURL), "Bearer "+appToken, nil)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "audio_url") {
			t.Errorf("POST /transcribe audio_url=%q: %d %s, want 400 naming audio_url", audioURL, resp.StatusCode, body)
		}
	}
	if jobs := serviceJobs(t, w); len(jobs) != 0 {
		t.Fatalf("after the refused requests the service has %d jobs, want 0: %+v", len(jobs), jobs)
	}
	if n := storedJobs(t, base, readToken); n != 0 {
		t.Fatalf("after the refused requests the kit's store has %d jobs, want 0", n)
	}

	// Submit through the program's own endpoint, with its token (the scheme's case is free,
	// RFC 9110 §11.1) and the listed file server's URL.
	resp, body := do(t, http.MethodPost, transcribe(w.Files.AudioURL), "bearer "+appToken, nil)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /transcribe: %d %s", resp.StatusCode, body)
	}
	var created struct{ ID string }
	if err := json.Unmarshal(body, &created); err != nil || created.ID == "" {
		t.Fatalf("POST /transcribe answered %s (%v)", body, err)
	}
	// The service got exactly that job, for that URL.
	jobs := serviceJobs(t, w)
	if len(jobs) != 1 || jobs[0].ID != created.ID {
		t.Fatalf("the service has jobs %+v, want the one job %s", jobs, created.ID)
	}
	if params, err := jobs[0].PreRecordedParams(); err != nil || params == nil || params.AudioURL != w.Files.AudioURL {
		t.Fatalf("the service's job has params %+v (%v), want audio_url %s", params, err, w.Files.AudioURL)
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

// appToken is the app's credential in the tests: 44 characters, as `openssl rand -base64 32`
// prints.
const appToken = "dGhlIGV4YW1wbGVzJyB0ZXN0IHRva2VuLCAzMiBieXQ="

// cleanEnv is the test's environment without the variables the programs read, so that a
// developer's own settings cannot change what is tested.
func cleanEnv() []string {
	return sandboxtest.EnvWithout("SCRIBEHOOK_", "LISTEN_ADDR=", "APP_TOKEN=", "AUDIO_ORIGINS=")
}

// serviceJobs is what the sandbox was asked to create, as its list endpoint answers.
func serviceJobs(t *testing.T, w *sandboxtest.World) []api.Job {
	t.Helper()
	c, err := w.Service.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	page, err := c.ListPreRecorded(ctx, api.ListQuery{})
	if err != nil {
		t.Fatalf("list the service's jobs: %v", err)
	}
	return page.Items
}

// storedJobs is how many jobs the program's kit has recorded, as its read API answers.
func storedJobs(t *testing.T, base, readToken string) int {
	t.Helper()
	resp, body := sandboxtest.Do(t, http.MethodGet, base+"/hooks/v1/jobs", "Bearer "+readToken, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /hooks/v1/jobs: %d %s", resp.StatusCode, body)
	}
	var page api.Page
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatalf("GET /hooks/v1/jobs: %v: %s", err, body)
	}
	return len(page.Items)
}

// RefusesToStart builds p and starts it once for each unsafe setting: no APP_TOKEN, one too
// short to be a secret, and AUDIO_ORIGINS entries that are not origins. Each time the program
// must exit with an error before it listens, its standard error saying what is wrong (and, for
// the token, how to make one) without repeating the token.
func RefusesToStart(t *testing.T, p Program) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, p.Name)
	if err := sandboxtest.BuildProgram(p.Dir, bin, p.BuildFlags...); err != nil {
		t.Fatal(err)
	}
	short := appToken[:21]
	for _, c := range []struct {
		name    string
		env     []string
		want    []string // in standard error
		secrets []string // never in standard error
	}{
		{"no APP_TOKEN", nil, []string{"APP_TOKEN", "openssl rand -base64 32"}, nil},
		{"empty APP_TOKEN", []string{"APP_TOKEN="}, []string{"APP_TOKEN", "openssl rand -base64 32"}, nil},
		{"short APP_TOKEN", []string{"APP_TOKEN=" + short}, []string{"APP_TOKEN", "22", "openssl rand -base64 32"}, []string{short}},
		{"an origin with a path", []string{"APP_TOKEN=" + appToken, "AUDIO_ORIGINS=https://allowed.example/audio"},
			[]string{"AUDIO_ORIGINS"}, []string{appToken}},
		{"an origin with userinfo", []string{"APP_TOKEN=" + appToken, "AUDIO_ORIGINS=https://u:p@allowed.example"},
			[]string{"AUDIO_ORIGINS"}, []string{appToken, "u:p"}},
		{"an origin of another scheme", []string{"APP_TOKEN=" + appToken, "AUDIO_ORIGINS=https://a.example,ftp://allowed.example"},
			[]string{"AUDIO_ORIGINS"}, []string{appToken}},
		{"a host alone", []string{"APP_TOKEN=" + appToken, "AUDIO_ORIGINS=allowed.example"},
			[]string{"AUDIO_ORIGINS"}, []string{appToken}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := append(append(cleanEnv(), "SCRIBEHOOK_API_KEY=k", "SCRIBEHOOK_READ_TOKEN=r"), c.env...)
			stderr := refusal(t, bin, env, []string{
				"-listen", "127.0.0.1:0",
				"-service-url", "http://127.0.0.1:1", // never reached: the program must stop first
				"-store", filepath.Join(t.TempDir(), "app.db"),
				"-artifacts", filepath.Join(dir, "artifacts"),
			})
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("standard error %q does not say %q", stderr, w)
				}
			}
			for _, s := range c.secrets {
				if strings.Contains(stderr, s) {
					t.Errorf("standard error %q repeats %q", stderr, s)
				}
			}
		})
	}
}

// refusal runs bin and returns its standard error once it has exited with an error; the test
// fails if it exits 0, or prints its address line (it started), or runs for a minute.
func refusal(t *testing.T, bin string, env, args []string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var stdout, stderr sandboxtest.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func(why string) {
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("%s\nstdout: %s\nstderr: %s", why, stdout.String(), stderr.String())
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-exited:
			if err == nil {
				t.Fatalf("exited 0, want an error\nstderr: %s", stderr.String())
			}
			return stderr.String()
		default:
		}
		if strings.Contains(stdout.String(), "listening on") {
			stop("the program started")
		}
		if time.Now().After(deadline) {
			stop("the program still runs after a minute")
		}
	}
}
