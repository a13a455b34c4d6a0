package configs

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// locatedRE is a loader error that points into the file: the line of the key at fault.
var locatedRE = regexp.MustCompile(`^config: (yaml: )?line [0-9]+: `)

// wholeFile are the errors about the file as a whole, which have no single line to name.
var wholeFile = []string{
	"config: the file holds several YAML documents: keep one",
	"config: " + errUTF16.Error(),
}

// FuzzLoad runs Load on any file, with one environment override: it must not panic nor hang,
// a configuration it accepts must validate, and every error must say where the problem is (a
// line of the file, or the key or variable at fault).
func FuzzLoad(f *testing.F) {
	if b, err := os.ReadFile("scribehook.example.yaml"); err == nil {
		f.Add(b, "", "")
	}
	f.Add([]byte("listen: 127.0.0.1:1\nlisten: 127.0.0.1:2\n"), "", "")
	f.Add([]byte("routes:\n  - {name: account, token_env: ACCOUNT_TOKEN}\n"), "ROUTES_1_NAME", "partner")
	f.Add([]byte("sinks:\n  - name: hook\n    kind: webhook\n    url: http://x\n    events: ['*']\n"), "SINKS_0_TIMEOUT", "1m")
	f.Add([]byte("receiver: {partitions: 1e999, body_limit: 99999999999999999999}\n"), "RECEIVER_PARTITIONS", "-1")
	f.Add([]byte("a: &a [x, *a]\n"), "", "")
	f.Add([]byte("listen: \xff\n"), "", "")
	f.Add([]byte(strings.Repeat("[", 64)), "", "")
	f.Add([]byte("service:\n  api_key: sk-123\n"), "SERVICE_API_KEY", "sk-456")
	// One file per fuzzing process, rewritten for each input: inputs of a process run one
	// after the other.
	path := filepath.Join(f.TempDir(), "scribehook.yaml")
	f.Fuzz(func(t *testing.T, data []byte, envKey, envValue string) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var environ []string
		if envKey != "" {
			environ = []string{EnvPrefix + envKey + "=" + envValue}
		}
		start := time.Now()
		cfg, err := Load(path, environ)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("Load took %v on %d bytes", d, len(data))
		}
		if err == nil {
			if verr := cfg.Validate(); verr != nil {
				t.Fatalf("Load accepted a configuration that does not validate: %v", verr)
			}
			return
		}
		var ve *ValidationError
		if errors.As(err, &ve) {
			for _, p := range ve.Problems {
				if p.Key == "" || p.Rule == "" {
					t.Fatalf("problem without key or rule: %+v", p)
				}
			}
			return
		}
		msg := err.Error()
		if envKey != "" && strings.HasPrefix(msg, "config: "+EnvPrefix) {
			return // an override error names its variable
		}
		for _, line := range strings.Split(msg, "\n") {
			if !located(line) {
				t.Fatalf("error names neither a line nor a key: %q", line)
			}
		}
	})
}

func located(msg string) bool {
	if locatedRE.MatchString(msg) {
		return true
	}
	for _, w := range wholeFile {
		if strings.HasPrefix(msg, w) {
			return true
		}
	}
	return false
}
