package handlers_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/subtitles"
)

// diarized is a result of two speakers, far enough apart to be a cue each.
func diarized() api.Result {
	spk := func(n int) *int { return &n }
	return api.Result{
		Transcription: &api.Transcription{
			Languages: []string{"en"},
			Utterances: []api.Utterance{
				{Start: 1, End: 1.9, Speaker: spk(0), Text: "Welcome back.", Words: []api.Word{
					{Word: "Welcome", Start: 1, End: 1.4}, {Word: "back.", Start: 1.5, End: 1.9}}},
				{Start: 4, End: 5, Speaker: spk(1), Text: "Thanks Alice.", Words: []api.Word{
					{Word: "Thanks", Start: 4, End: 4.4}, {Word: "Alice.", Start: 4.5, End: 5}}},
			},
		},
	}
}

func readyData(t *testing.T, ev api.Event) sinks.SubtitlesReadyData {
	t.Helper()
	var d sinks.SubtitlesReadyData
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		t.Fatalf("subtitles.ready data %s: %v", ev.Data, err)
	}
	return d
}

const (
	srtNamedByMetadata = "1\n00:00:01,000 --> 00:00:02,200\nSpeaker 1: Welcome back.\n\n2\n00:00:04,000 --> 00:00:05,000\nBob: Thanks Alice.\n"
	srtNamed           = "1\n00:00:01,000 --> 00:00:02,350\nAlice Martin: Welcome back.\n\n2\n00:00:04,000 --> 00:00:05,200\nBob Stone: Thanks Alice.\n"
	vttNamed           = "WEBVTT\n\n1\n00:00:01.000 --> 00:00:02.350\n<v Alice Martin>Alice Martin: Welcome back.\n\n" +
		"2\n00:00:04.000 --> 00:00:05.200\n<v Bob Stone>Bob Stone: Thanks Alice.\n"
)

// Names given at submit time (custom_metadata) show in the first rendering; naming the
// speakers renders again as revision 2 in the transaction that stores the names, queues one
// subtitles.ready of its own id, and the same names again change nothing.
func TestSetSpeakersRendersAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, r := startOn(t, handlers.Config{
		Subtitles: handlers.SubtitleRendering{Dir: dir, Profile: subtitles.DefaultProfile(), Formats: []subtitles.Format{subtitles.SRT, subtitles.VTT}},
		Sinks:     []sinks.Spec{{Name: "hook", Kind: "log", Filter: sinks.Filter{Events: []string{api.EventSubtitlesReady}}}},
	})
	applyAll(t, s, r.p, jobSuccess("job-spk", diarized(), `{"scribehook_speakers":{"1":"Bob"},"team":"a"}`))
	first := claimReady(t, s, 1)[0]
	if d := readyData(t, first); d.Revision != 1 || len(d.Files) != 2 || d.Files[0].Content != srtNamedByMetadata {
		t.Fatalf("first subtitles.ready %s", first.Data)
	}

	namer := namerOf(t, r.p)
	res, err := namer.SetSpeakers(t.Context(), "job-spk", api.SpeakerNames{0: "Alice Martin", 1: "Bob Stone"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || res.Revision != 2 || res.EventID == "" || len(res.Files) != 2 {
		t.Fatalf("SetSpeakers = %+v", res)
	}
	second := claimReady(t, s, 1)[0]
	want := sinks.SubtitlesReadyData{JobID: "job-spk", Revision: 2, Files: []sinks.SubtitleFile{
		{Format: "srt", Language: "en", Name: "subtitles.en.srt", Content: srtNamed},
		{Format: "vtt", Language: "en", Name: "subtitles.en.vtt", Content: vttNamed},
	}}
	wantData, _ := json.Marshal(want)
	if string(second.Data) != string(wantData) {
		t.Errorf("second subtitles.ready data\n%s\nwant\n%s", second.Data, wantData)
	}
	if second.ID != res.EventID || second.ID == first.ID || second.Kind != api.KindPreRecorded ||
		string(second.CustomMetadata) != `{"scribehook_speakers":{"1":"Bob"},"team":"a"}` {
		t.Errorf("second event %+v", second)
	}
	for name, content := range map[string]string{"subtitles.en.srt": srtNamed, "subtitles.en.vtt": vttNamed} {
		if b, err := os.ReadFile(filepath.Join(dir, "job-spk", name)); err != nil || string(b) != content {
			t.Errorf("%s on disk: %q, %v", name, b, err)
		}
	}

	again, err := namer.SetSpeakers(t.Context(), "job-spk", api.SpeakerNames{1: "Bob Stone", 0: "Alice Martin"})
	if err != nil || again.Changed || again.Revision != 2 || again.EventID != "" {
		t.Errorf("the same names again: %+v, %v", again, err)
	}
	claimReady(t, s, 0)

	if _, err := namer.SetSpeakers(t.Context(), "no-such-job", api.SpeakerNames{0: "A"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown job: %v", err)
	}
	if _, err := namer.SetSpeakers(t.Context(), "job-spk", api.SpeakerNames{0: " A"}); !errors.Is(err, handlers.ErrNamesInvalid) {
		t.Errorf("invalid names: %v", err)
	}
}

// Names stored before the result arrives are the first rendering's; concurrent namings each
// get a revision of their own (run with -race).
func TestSetSpeakersBeforeResultAndConcurrent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, r := startOn(t, handlers.Config{
		Subtitles: handlers.SubtitleRendering{Dir: dir, Profile: subtitles.DefaultProfile(), Formats: []subtitles.Format{subtitles.SRT}},
		Sinks:     []sinks.Spec{{Name: "hook", Kind: "log", Filter: sinks.Filter{Events: []string{api.EventSubtitlesReady}}}},
	})
	if err := s.PutJob(t.Context(), store.JobRecord{Job: api.Job{ID: "job-early", Kind: api.KindPreRecorded, Status: api.StatusProcessing, CreatedAt: api.NewTime(baseTime)}}); err != nil {
		t.Fatal(err)
	}
	namer := namerOf(t, r.p)
	res, err := namer.SetSpeakers(t.Context(), "job-early", api.SpeakerNames{0: "Alice Martin", 1: "Bob Stone"})
	if err != nil || !res.Changed || res.Revision != 0 || res.EventID != "" {
		t.Fatalf("naming before the result: %+v, %v", res, err)
	}
	applyAll(t, s, r.p, jobSuccess("job-early", diarized(), ""))
	if d := readyData(t, claimReady(t, s, 1)[0]); d.Revision != 1 || d.Files[0].Content != srtNamed {
		t.Fatalf("first rendering %+v", d)
	}
	var wg sync.WaitGroup
	revs := make([]int64, 4)
	for i := range revs {
		wg.Go(func() {
			res, err := namer.SetSpeakers(t.Context(), "job-early", api.SpeakerNames{0: string(rune('A' + i))})
			if err != nil {
				t.Error(err)
			}
			revs[i] = res.Revision
		})
	}
	wg.Wait()
	got := map[int64]bool{}
	for _, ev := range claimReady(t, s, 4) {
		got[readyData(t, ev).Revision] = true
	}
	for _, rev := range []int64{2, 3, 4, 5} {
		if !got[rev] {
			t.Errorf("revisions queued %v, want 2 to 5 (results %v)", got, revs)
		}
	}
}

// claimReady claims the subtitles.ready deliveries queued for the sink hook, n of them.
func claimReady(t *testing.T, s store.Store, n int) []api.Event {
	t.Helper()
	ds, err := s.ClaimSinkDeliveries(t.Context(), "hook", false, time.Now().Add(time.Hour), time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != n {
		t.Fatalf("%d deliveries queued, want %d", len(ds), n)
	}
	out := make([]api.Event, len(ds))
	for i, d := range ds {
		out[i] = d.Event
		if err := s.CompleteSinkDelivery(t.Context(), d.ID); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func namerOf(t *testing.T, p *handlers.Pipeline) *handlers.Namer {
	t.Helper()
	n, err := p.Namer()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
