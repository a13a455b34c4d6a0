package sandboxtest

import (
	"bytes"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// DemoSample reads the demo's recording (ReadDemoSample).
func DemoSample(tb testing.TB) Recording {
	tb.Helper()
	return must(ReadDemoSample())(tb)
}

// RunProgram builds the main package in dir with buildFlags and starts it with args in env
// (StartProgram). At the end of the test it is killed if still running; its standard output
// is logged (shown with -v), its standard error only if the test failed.
func RunProgram(tb testing.TB, dir string, buildFlags, args, env []string) *Program {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), filepath.Base(must(filepath.Abs(dir))(tb)))
	if err := BuildProgram(dir, bin, buildFlags...); err != nil {
		tb.Fatal(err)
	}
	p := must(StartProgram(bin, args, env))(tb)
	tb.Cleanup(func() {
		p.Kill()
		tb.Logf("program's stdout:\n%s", strings.Join(p.Lines(), "\n"))
		if tb.Failed() {
			tb.Logf("program's stderr:\n%s", p.Stderr())
		}
	})
	return p
}

// Wait polls the program's lines until find reports what it looks for (WaitFor), failing the
// test after d.
func (p *Program) Wait(tb testing.TB, what string, d time.Duration, find func(lines []string) (string, bool)) string {
	tb.Helper()
	return must(p.WaitFor(what, d, find))(tb)
}

var client = &http.Client{Timeout: 30 * time.Second}

// Do sends a request to u with auth as its Authorization header (none if empty) and body as
// JSON (none if nil), and returns the answer with its body read. Only loopback is ever asked.
func Do(tb testing.TB, method, u, auth string, body []byte) (*http.Response, []byte) {
	tb.Helper()
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: read the answer: %v", method, u, err)
	}
	return resp, b
}

// must(v, err)(tb) is v, or the test fails with err: the layer for tests over the functions
// that return an error.
func must[T any](v T, err error) func(testing.TB) T {
	return func(tb testing.TB) T {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return v
	}
}
