package sinks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/api"
)

func TestPathSegment(t *testing.T) {
	long := strings.Repeat("a", 200)
	longSum := sha256.Sum256([]byte(long))
	slashy := "a" + strings.Repeat("/", 100) // 301 bytes once escaped
	slashySum := sha256.Sum256([]byte(slashy))
	tests := []struct{ id, want string }{
		{"d291007a-2bc5-46e7-a7a2-2fcb767af716", "d291007a-2bc5-46e7-a7a2-2fcb767af716"},
		{"Job_1-A", "Job_1-A"},
		{"a.b", "a.b"},
		{"a_b", "a_b"},
		{"a..b", "a..b"},
		{"a/b", "a%2Fb"},
		{`a\b`, "a%5Cb"},
		{"a b", "a%20b"},
		{"a%2Fb", "a%252Fb"},
		{"a\x00b", "a%00b"},
		{".", "%2E"},
		{"..", "%2E%2E"},
		{".job", "%2Ejob"},
		{"job.", "job%2E"},
		{"../../etc", "%2E.%2F..%2Fetc"},
		{"é", "%C3%A9"},
		{"\xff", "%FF"},
		{"", "%"},
		{"%", "%25"},
		{strings.Repeat("a", 128), strings.Repeat("a", 128)},
		{long, strings.Repeat("a", 60) + "%~" + hex.EncodeToString(longSum[:])},
		// 60 bytes would cut the twentieth escape after its '%' and one digit: 58 are kept.
		{slashy, "a" + strings.Repeat("%2F", 19) + "%~" + hex.EncodeToString(slashySum[:])},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := PathSegment(tt.id)
		if got != tt.want {
			t.Errorf("PathSegment(%q) = %q, want %q", tt.id, got, tt.want)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("PathSegment(%q) = PathSegment(%q) = %q", tt.id, other, got)
		}
		seen[got] = tt.id
		if err := checkSegment(got); err != nil {
			t.Errorf("PathSegment(%q) = %q: %v", tt.id, got, err)
		}
	}
}

// The file sink writes a job's files in PathSegment of its id: ids that differ only in a
// character that is not kept land in folders of their own, inside the sink's directory.
func TestFileSinkFolderPerJob(t *testing.T) {
	s, dir := newFileSink(t)
	ids := []string{"a.b", "a_b", "a/b", "..", ".job", "a b", "a/../../b"}
	for i, id := range ids {
		data, err := json.Marshal(SubtitlesReadyData{JobID: id, Files: []SubtitleFile{{Name: "subtitles.en.srt", Content: id}}})
		if err != nil {
			t.Fatal(err)
		}
		ev := fileEvent(api.EventSubtitlesReady, "ev-"+strconv.Itoa(i), string(data))
		ev.JobID = id
		if err := s.Deliver(context.Background(), ev); err != nil {
			t.Fatalf("deliver for job %q: %v", id, err)
		}
	}
	for _, id := range ids {
		b, err := os.ReadFile(filepath.Join(dir, PathSegment(id), "subtitles.en.srt"))
		if err != nil || string(b) != id {
			t.Errorf("job %q: subtitles %q, %v", id, b, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if want := "%2E%2E, %2Ejob, a%20b, a%2F..%2F..%2Fb, a%2Fb, a.b, a_b"; strings.Join(got, ", ") != want {
		t.Errorf("folders %v", got)
	}
}

// FuzzPathSegment checks on pairs of ids that the mapping is one-to-one, gives the same name
// for the same id, and always gives one harmless path segment; and that an unhashed name
// decodes back to its id.
func FuzzPathSegment(f *testing.F) {
	for _, seed := range [][2]string{
		{"a.b", "a_b"}, {"a/b", "a_b"}, {"..", "%2E%2E"}, {"", "%"}, {".", "_"}, {"a%2Fb", "a/b"},
		{strings.Repeat("x", 129), strings.Repeat("x", 130)}, {strings.Repeat("/", 43), strings.Repeat("/", 42) + "%"},
		{"é", "%C3%A9"}, {"job.", "job%2E"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		na, nb := PathSegment(a), PathSegment(b)
		for _, n := range []string{na, nb} {
			if err := checkSegment(n); err != nil {
				t.Fatalf("PathSegment of %q or %q: %q: %v", a, b, n, err)
			}
		}
		if (a == b) != (na == nb) {
			t.Fatalf("PathSegment(%q) = %q, PathSegment(%q) = %q", a, na, b, nb)
		}
		if PathSegment(a) != na {
			t.Fatalf("PathSegment(%q) changes between calls", a)
		}
		if !strings.Contains(na, "%~") {
			if back, err := decodeSegment(na); err != nil || back != a {
				t.Fatalf("PathSegment(%q) = %q decodes to %q, %v", a, na, back, err)
			}
		}
	})
}

// checkSegment is what a folder name must be: one segment, inside its parent, not hidden,
// bounded, made of printable ASCII.
func checkSegment(n string) error {
	switch {
	case n == "" || n == "." || n == "..":
		return fmt.Errorf("empty or a dot name")
	case len(n) > maxSegment:
		return fmt.Errorf("%d bytes long", len(n))
	case strings.HasPrefix(n, ".") || strings.HasSuffix(n, "."):
		return fmt.Errorf("starts or ends with a dot")
	case !filepath.IsLocal(n) || filepath.Base(n) != n:
		return fmt.Errorf("not one local path segment")
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; c <= ' ' || c >= 0x7f || c == '/' || c == '\\' {
			return fmt.Errorf("byte %#x at %d", c, i)
		}
	}
	return nil
}

// decodeSegment undoes an unhashed PathSegment, refusing anything PathSegment never writes.
func decodeSegment(n string) (string, error) {
	if n == "%" {
		return "", nil
	}
	var b []byte
	for i := 0; i < len(n); i++ {
		if n[i] != '%' {
			b = append(b, n[i])
			continue
		}
		if i+2 >= len(n) {
			return "", fmt.Errorf("escape cut at %d", i)
		}
		h := n[i+1 : i+3]
		if strings.ToUpper(h) != h {
			return "", fmt.Errorf("lower-case escape %q", h)
		}
		v, err := strconv.ParseUint(h, 16, 8)
		if err != nil {
			return "", fmt.Errorf("escape %q: %v", h, err)
		}
		b = append(b, byte(v))
		i += 2
	}
	return string(b), nil
}
