package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
)

func TestLiveCallbacksAreDeterministicAndClassifyAsLiveTranscripts(t *testing.T) {
	a, err := liveCallbacks(7, 192, 8)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := liveCallbacks(7, 192, 8)
	keys := map[string]bool{}
	msgs := map[string]bool{}
	for i := range a {
		if !bytes.Equal(a[i].Body, b[i].Body) {
			t.Fatalf("call %d differs between two generations with the same seed", i)
		}
		c, err := api.ClassifyCallback(a[i].Body)
		if err != nil || c.Kind != api.CallbackLiveMessage || c.JobID != a[i].JobID || c.MessageType != api.MessageTranscript {
			t.Fatalf("call %d classified %+v, %v", i, c, err)
		}
		var cb api.LiveCallback
		if err := json.Unmarshal(a[i].Body, &cb); err != nil {
			t.Fatal(err)
		}
		if cat, _ := api.Category(&cb.Payload); cat != api.CategoryPartialTranscripts && cat != api.CategoryFinalTranscripts {
			t.Fatalf("call %d: category %s", i, cat)
		}
		if keys[a[i].DedupeKey] || msgs[a[i].MsgKey] {
			t.Fatalf("call %d repeats a dedupe key or message key", i)
		}
		keys[a[i].DedupeKey], msgs[a[i].MsgKey] = true, true
	}
	// A partial then its final, per session: half of each.
	finals := 0
	for _, c := range a {
		if strings.HasSuffix(c.MsgKey, "/final") {
			finals++
		}
	}
	if finals != 96 {
		t.Errorf("%d finals of 192 messages", finals)
	}
}

func TestPreRecordedResultsHaveTheirWordCountOverTheirLength(t *testing.T) {
	for _, tc := range []struct {
		shape string
		words int
		secs  float64
	}{{shapePre1m, 150, 60}, {shapePre2h, 20000, 7200}} {
		calls, err := makeCallbacks(3, tc.shape, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		c, err := api.ClassifyCallback(calls[0].Body)
		if err != nil || c.Kind != api.CallbackJobSuccess || c.JobID != calls[0].JobID {
			t.Fatalf("%s classified %+v, %v", tc.shape, c, err)
		}
		var cb api.JobCallback
		if err := json.Unmarshal(calls[0].Body, &cb); err != nil {
			t.Fatal(err)
		}
		n, last := 0, 0.0
		for _, u := range cb.Payload.Transcription.Utterances {
			n += len(u.Words)
			for _, w := range u.Words {
				if w.Start < last || w.End < w.Start {
					t.Fatalf("%s: words out of order at %.3f", tc.shape, w.Start)
				}
				last = w.End
			}
		}
		if n != tc.words || last > tc.secs || last < tc.secs*0.9 {
			t.Errorf("%s: %d words ending at %.1f s, want %d over %.0f s", tc.shape, n, last, tc.words, tc.secs)
		}
	}
}

func TestQuantileIsNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	l := summarise(ds)
	if l.P50 != 50*time.Millisecond || l.P90 != 90*time.Millisecond || l.P99 != 99*time.Millisecond || l.Max != 100*time.Millisecond {
		t.Errorf("got %+v", l)
	}
	if one := summarise([]time.Duration{time.Second}); one.P50 != time.Second || one.P99 != time.Second {
		t.Errorf("one sample: %+v", one)
	}
}

// The configuration the tool writes must stay one that serve accepts, as the configuration
// evolves.
func TestGeneratedServeConfigurationLoads(t *testing.T) {
	dir := t.TempDir()
	p, err := newServe("scribehook", serveSetup{
		Dir: dir, FileSink: filepath.Join(dir, "out"), HookURL: "http://127.0.0.1:9/hook", HookEvents: "live.*", Subtitles: true,
		HookOrdered: true, DebugListen: "127.0.0.1:6061",
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Load(p.cfg, p.env)
	if err != nil {
		b, _ := os.ReadFile(p.cfg)
		t.Fatalf("%v\n%s", err, b)
	}
	secrets, err := cfg.Secrets(p.env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != p.addr || cfg.Store.DSN != p.db || len(cfg.Sinks) != 2 || cfg.Sinks[1].Allow[0] != "127.0.0.0/8" ||
		len(cfg.Subtitles.Formats) != 2 || secrets.Routes["bench"].Token != routeToken || secrets.ReadToken != readToken ||
		!cfg.Sinks[1].Ordered || cfg.Debug.Listen != "127.0.0.1:6061" {
		t.Errorf("configuration = %+v", cfg)
	}
}

// The verdict on acknowledged calls is shared by the single serve's check and the replicas':
// each names the call its own way in a problem, and both count alike.
func TestJudgeCountsEachWayACallCanFail(t *testing.T) {
	st := storeState{
		inbox: map[string]inboxRow{
			"ok": {1, "done"}, "pending": {2, "pending"}, "lost": {3, "done"}, "twice": {4, "done"}, "job": {5, "done"},
		},
		liveRows: map[int64]int{1: 1, 4: 2},
		jobs:     map[string]string{"j1": "failed"},
	}
	calls := []callback{
		{DedupeKey: "ok", MsgKey: "m"}, {DedupeKey: "missing", MsgKey: "m"}, {DedupeKey: "pending", MsgKey: "m"},
		{DedupeKey: "lost", MsgKey: "m"}, {DedupeKey: "twice", MsgKey: "m"}, {DedupeKey: "job", JobID: "j1"},
	}
	c := applied{maxProblems: 10}
	for i, call := range calls {
		c.judge(st, call, call.MsgKey != "", func() (string, string) { return fmt.Sprintf("call %d", i), fmt.Sprintf(" (call %d)", i) })
	}
	if c.Acked != 6 || c.Missing != 1 || c.NotDone != 1 || c.NoEffect != 2 || c.Twice != 1 {
		t.Errorf("counts %+v", c)
	}
	want := []string{
		"call 1 has no inbox row",
		"inbox row 2 (call 2) is pending",
		"inbox row 3 (call 3) is done but its live message is not stored",
		"inbox row 4 (call 4) stored 2 live messages",
		`job j1 (call 5): record status "failed"`,
	}
	if strings.Join(c.Problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s", strings.Join(c.Problems, "\n"))
	}
}

func TestParseRatesWantsRisingPositiveRates(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []float64 // nil: refused
	}{
		{"500,1000, 2000", []float64{500, 1000, 2000}},
		{"750", []float64{750}},
		{"1000,500", nil},
		{"500,500", nil},
		{"0,100", nil},
		{"100,x", nil},
		{"", nil},
	} {
		got, err := parseRates(tc.in)
		if (err != nil) != (tc.want == nil) || !slices.Equal(got, tc.want) {
			t.Errorf("parseRates(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestTopLinesKeepsTheSamplesAndTheFirstFunctions(t *testing.T) {
	top := `File: scribehook
Type: cpu
Duration: 2s, Total samples = 2.12s (105.84%)
Showing nodes accounting for 1.67s, 78.77% of 2.12s total
      flat  flat%   sum%        cum   cum%
     0.91s 42.92% 42.92%      0.93s 43.87%  runtime.cgocall
     0.07s  3.30% 46.23%      0.07s  3.30%  runtime.futex
     0.06s  2.83% 49.06%      0.06s  2.83%  runtime.nextFreeFast
`
	got := topLines(top, 2)
	want := []string{
		"Duration: 2s, Total samples = 2.12s (105.84%)",
		"      flat  flat%   sum%        cum   cum%",
		"     0.91s 42.92% 42.92%      0.93s 43.87%  runtime.cgocall",
		"     0.07s  3.30% 46.23%      0.07s  3.30%  runtime.futex",
	}
	if !slices.Equal(got, want) {
		t.Errorf("topLines:\n%s", strings.Join(got, "\n"))
	}
}

func TestFlagGivenIsOnlyWhatTheCommandLineSet(t *testing.T) {
	fs, _ := newFlags("test")
	addLoad(fs, loadFlags{n: 10, conns: 4}, "rate", "drain")
	if err := fs.Parse([]string{"-conns", "4", "-keep"}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"conns": true, "keep": true, "rate": false, "n": false, "no-such-flag": false} {
		if got := flagGiven(fs, name); got != want {
			t.Errorf("flagGiven(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestArrivalsCountRetriesAndDoubleApplications(t *testing.T) {
	a := newArrivals()
	for _, arr := range []struct {
		key, id string
		newKey  bool
	}{
		{"s1/m1", "e1", true},
		{"s1/m1", "e1", false}, // a retry of the same event
		{"s1/m2", "e2", true},
		{"s1/m2", "e3", false}, // the same message under a second event id
		{"j1/job.succeeded", "e4", true},
	} {
		if got := a.add(arr.key, arr.id); got != arr.newKey {
			t.Errorf("add(%s, %s) = %v, want %v", arr.key, arr.id, got, arr.newKey)
		}
	}
	if n := a.dupIDs(); n != 1 {
		t.Errorf("dupIDs = %d, want 1 (e1)", n)
	}
	missing, twice := a.keyCounts([]string{"s1/m1", "s1/m2", "s1/m3", "j1/job.succeeded"})
	if missing != 1 || twice != 1 {
		t.Errorf("keyCounts = %d missing, %d twice; want 1 (s1/m3) and 1 (s1/m2)", missing, twice)
	}
}
