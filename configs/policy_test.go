package configs

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// The policy keys of a sink: retry, timeout, concurrency, rate and rate_burst.

func TestSinkPolicyLoad(t *testing.T) {
	body := `sinks:
  - name: crm
    kind: webhook
    url: https://crm.example.com/hook
    events: ["job.succeeded"]
    retry: [0, 5s, 5m, 1h]
    timeout: 3s
    concurrency: 4
    rate: 2.5
  - name: files
    kind: file
    events: ["*"]
    rate: 50
    rate_burst: 100
`
	cfg, err := Load(writeFile(t, body), nil)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	crm, files := cfg.Sinks[0], cfg.Sinks[1]
	if !slices.Equal(crm.Retry, []time.Duration{0, 5 * time.Second, 5 * time.Minute, time.Hour}) ||
		crm.Timeout != 3*time.Second || crm.Concurrency != 4 || crm.Rate != 2.5 || crm.RateBurst != 0 {
		t.Errorf("crm = %+v", crm)
	}
	if files.Retry != nil || files.Rate != 50 || files.RateBurst != 100 || files.Timeout != DefaultSinkTimeout {
		t.Errorf("files = %+v", files)
	}

	// Every key from the environment, the schedule as a comma-separated list.
	cfg, err = Load(writeFile(t, body), []string{
		"SCRIBEHOOK_SINKS_0_RETRY=0s, 1s,1m",
		"SCRIBEHOOK_SINKS_0_RATE=0.5",
		"SCRIBEHOOK_SINKS_0_RATE_BURST=3",
		"SCRIBEHOOK_SINKS_0_CONCURRENCY=2",
		"SCRIBEHOOK_SINKS_0_TIMEOUT=1500ms",
		"SCRIBEHOOK_SINKS_1_RATE=0",
		"SCRIBEHOOK_SINKS_1_RATE_BURST=", // empty: unset, the file's 100 stays
	})
	if err == nil {
		t.Fatal("rate 0 with a burst of 100 was taken")
	}
	if want := "config: sinks[1].rate_burst needs a rate: set sinks[1].rate, or leave rate_burst out (got 100 with no rate)"; err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	cfg, err = Load(writeFile(t, body), []string{
		"SCRIBEHOOK_SINKS_0_RETRY=0s, 1s,1m",
		"SCRIBEHOOK_SINKS_0_RATE=0.5",
		"SCRIBEHOOK_SINKS_0_RATE_BURST=3",
		"SCRIBEHOOK_SINKS_0_CONCURRENCY=2",
		"SCRIBEHOOK_SINKS_0_TIMEOUT=1500ms",
	})
	if err != nil {
		t.Fatalf("load with the environment: %v", err)
	}
	crm = cfg.Sinks[0]
	if !slices.Equal(crm.Retry, []time.Duration{0, time.Second, time.Minute}) || crm.Rate != 0.5 || crm.RateBurst != 3 ||
		crm.Concurrency != 2 || crm.Timeout != 1500*time.Millisecond {
		t.Errorf("crm from the environment = %+v", crm)
	}
	if got := EnvName("sinks[0].rate_burst"); got != "SCRIBEHOOK_SINKS_0_RATE_BURST" {
		t.Errorf("EnvName = %s", got)
	}
}

func TestSinkPolicyWrongTypes(t *testing.T) {
	body := "sinks:\n  - name: x\n    events: [\"*\"]\n    retry: [0s, soon, 5m]\n    rate: fast\n    rate_burst: 1.5\n    concurrency: many\n  - name: y\n    events: [\"*\"]\n    retry: 5s\n"
	_, err := Load(writeFile(t, body), nil)
	want := []string{
		`config: line 4: sinks[0].retry[1] must be a duration such as 10s or 1m30s (got "soon")`,
		`config: line 5: sinks[0].rate must be a number (got "fast")`,
		`config: line 6: sinks[0].rate_burst must be an integer (got "1.5")`,
		`config: line 7: sinks[0].concurrency must be an integer (got "many")`,
		`config: line 10: sinks[1].retry must be a list (got "5s")`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Fatalf("err =\n%v\nwant\n%s", err, strings.Join(want, "\n"))
	}
	_, err = Load("", []string{"SCRIBEHOOK_SINKS_0_RETRY=0s,later", "SCRIBEHOOK_SINKS_0_RATE=5/s"})
	wantEnv := `config: SCRIBEHOOK_SINKS_0_RATE: sinks[0].rate must be a number (got "5/s"); ` +
		`SCRIBEHOOK_SINKS_0_RETRY: sinks[0].retry[1] must be a duration such as 10s or 1m30s (got "later")`
	if err == nil || err.Error() != wantEnv {
		t.Fatalf("err =\n%v\nwant\n%s", err, wantEnv)
	}
}

func TestSinkPolicySentences(t *testing.T) {
	cases := []struct {
		name   string
		breaks func(s *Sink)
		want   []string
	}{
		{
			name:   "negative waits",
			breaks: func(s *Sink) { s.Retry = []time.Duration{0, -5 * time.Second, time.Minute, -time.Hour} },
			want: []string{
				"sinks[0].retry[1] must be a duration of at least 0s (got -5s)",
				"sinks[0].retry[3] must be a duration of at least 0s (got -1h0m0s)",
			},
		},
		{
			name:   "an empty schedule",
			breaks: func(s *Sink) { s.Retry = []time.Duration{} },
			want:   []string{"sinks[0].retry must list at least one wait, e.g. [0s, 5s, 5m], or be left out for the default schedule"},
		},
		{
			name:   "a negative rate",
			breaks: func(s *Sink) { s.Rate = -1 },
			want:   []string{"sinks[0].rate must be a positive number of deliveries per second, or 0 for no limit (got -1)"},
		},
		{
			name:   "NaN",
			breaks: func(s *Sink) { s.Rate = math.NaN() },
			want:   []string{"sinks[0].rate must be a positive number of deliveries per second, or 0 for no limit (got NaN)"},
		},
		{
			name:   "infinity",
			breaks: func(s *Sink) { s.Rate, s.RateBurst = math.Inf(1), 5 },
			want:   []string{"sinks[0].rate must be a positive number of deliveries per second, or 0 for no limit (got +Inf)"},
		},
		{
			name:   "a negative burst",
			breaks: func(s *Sink) { s.Rate, s.RateBurst = 5, -1 },
			want:   []string{"sinks[0].rate_burst must not be negative (got -1; 0 is one second's worth of rate)"},
		},
		{
			name:   "a burst without a rate",
			breaks: func(s *Sink) { s.RateBurst = 10 },
			want:   []string{"sinks[0].rate_burst needs a rate: set sinks[0].rate, or leave rate_burst out (got 10 with no rate)"},
		},
		{
			name:   "timeout and concurrency",
			breaks: func(s *Sink) { s.Timeout, s.Concurrency = -time.Second, -2 },
			want: []string{
				"sinks[0].concurrency must not be negative (got -2; 0 is the default)",
				"sinks[0].timeout must be a positive duration (got -1s)",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ServeDefaults()
			tc.breaks(&cfg.Sinks[0])
			var ve *ValidationError
			if err := cfg.Validate(); !errors.As(err, &ve) {
				t.Fatalf("err = %v", err)
			}
			if got := ve.Sentences(); !slices.Equal(got, tc.want) {
				t.Fatalf("sentences:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
	cfg := ServeDefaults()
	cfg.Sinks[0].Retry = []time.Duration{0, 0, time.Second}
	cfg.Sinks[0].Rate, cfg.Sinks[0].RateBurst = 0.25, 1
	if err := cfg.Validate(); err != nil {
		t.Fatalf("a valid policy refused: %v", err)
	}
}
