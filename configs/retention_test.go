package configs

import (
	"fmt"
	"strings"
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

// Finished jobs are kept at least as long as a callback token authenticates: a job completes
// after its token was minted, so no delivery a token still lets in finds its record pruned.
func TestRetentionJobsOutlastTokens(t *testing.T) {
	hour := func(n int) Keep { return Keep(time.Duration(n) * time.Hour) }
	cases := []struct {
		jobs Keep
		ttl  time.Duration
		want string // "" is valid
	}{
		{Forever, 7 * day, ""},
		{Days(7), 7 * day, ""},
		{Days(30), 7 * day, ""},
		{Days(2), 36 * time.Hour, ""},
		{Days(3), 7 * day, "config: retention.jobs must be at least receiver.token_ttl (7d), or forever: a late delivery its callback token still authenticates would create a pruned job's record again and send its events again (got 3d)"},
		{hour(36), 48 * time.Hour, "config: retention.jobs must be at least receiver.token_ttl (2d), or forever: a late delivery its callback token still authenticates would create a pruned job's record again and send its events again (got 36h)"},
	}
	for _, tc := range cases {
		cfg := ServeDefaults()
		cfg.Receiver.TokenTTL, cfg.Retention.Jobs = tc.ttl, tc.jobs
		cfg.Retention.Live = LiveRetention{} // every category for ever: fine while jobs are
		if tc.jobs != Forever {
			l := &cfg.Retention.Live
			for _, k := range []*Keep{&l.PartialTranscripts, &l.FinalTranscripts, &l.SpeechEvents, &l.PreProcessingEvents,
				&l.RealtimeProcessingEvents, &l.PostProcessingEvents, &l.Acknowledgments, &l.Errors, &l.LifecycleEvents} {
				*k = hour(1)
			}
		}
		err := cfg.Validate()
		if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
			t.Errorf("jobs %s, token_ttl %s: err = %v\nwant %q", tc.jobs, tc.ttl, err, tc.want)
		}
	}
	// Both keys come from where they are set, the file or the environment.
	_, err := Load("", []string{"SCRIBEHOOK_RETENTION_JOBS=1d", "SCRIBEHOOK_RECEIVER_TOKEN_TTL=48h", "SCRIBEHOOK_RETENTION_LIVE_FINAL_TRANSCRIPTS=1d"})
	if err == nil || !strings.Contains(err.Error(), "retention.jobs must be at least receiver.token_ttl (2d)") {
		t.Errorf("Load: err = %v", err)
	}
}
