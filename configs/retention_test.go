package configs

import (
	"testing"
	"time"
)

func TestKeepParseAndString(t *testing.T) {
	cases := []struct {
		in   string
		want Keep
		text string // String of the value
	}{
		{"forever", Forever, "forever"},
		{"Forever", Forever, "forever"},
		{"0", Forever, "forever"},
		{"7d", Days(7), "7d"},
		{"0d", Forever, "forever"},
		{"36h", Keep(36 * time.Hour), "36h"},
		{"48h", Days(2), "2d"},
		{"90m", Keep(90 * time.Minute), "1h30m"},
		{"1h30m15s", Keep(time.Hour + 30*time.Minute + 15*time.Second), "1h30m15s"},
	}
	for _, tc := range cases {
		got, err := ParseKeep(tc.in)
		if err != nil || got != tc.want || got.String() != tc.text {
			t.Errorf("ParseKeep(%q) = %v (%s), %v; want %v (%s)", tc.in, time.Duration(got), got, err, time.Duration(tc.want), tc.text)
		}
	}
	for _, bad := range []string{"", "soon", "7 days", "-1d", "1.5d", "d"} {
		if k, err := ParseKeep(bad); err == nil {
			t.Errorf("ParseKeep(%q) = %s, want an error", bad, k)
		}
	}
}

// A value that is not a duration names its key and the forms it may take, in the file and in
// the environment.
func TestKeepErrors(t *testing.T) {
	_, err := Load(writeFile(t, "retention:\n  live:\n    errors: soon\n"), nil)
	if want := `config: line 3: retention.live.errors must be a duration such as 36h or 7d, or forever (got "soon")`; err == nil || err.Error() != want {
		t.Errorf("file: err = %v\nwant %s", err, want)
	}
	_, err = Load("", []string{"SCRIBEHOOK_RETENTION_JOBS=a while"})
	if want := `config: SCRIBEHOOK_RETENTION_JOBS: retention.jobs must be a duration such as 36h or 7d, or forever (got "a while")`; err == nil || err.Error() != want {
		t.Errorf("env: err = %v\nwant %s", err, want)
	}
}
