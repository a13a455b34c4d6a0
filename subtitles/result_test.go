package subtitles

import (
	"strings"
	"testing"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/testjson"
)

// The full job result of the api package: a transcription on two channels, a French
// translation without words and a German one that failed.
func TestFromResult(t *testing.T) {
	var job struct {
		Result api.Result `json:"result"`
	}
	testjson.FullJob(t, &job)
	tracks, err := FromResult(&job.Result, DefaultProfile())
	if err != nil {
		t.Fatal(err)
	}
	if len(tracks) != 2 {
		t.Fatalf("%d tracks, want the transcription and French", len(tracks))
	}
	got := map[string][]string{}
	for _, tr := range tracks {
		for _, c := range tr.Cues {
			got[tr.Language] = append(got[tr.Language], cueString(c)+" "+c.Language)
		}
	}
	// "Bonjour." has no words: its text is spread over its utterance (2.0–2.9 s); it is
	// French, so it is a cue of its own (a language change ends a cue).
	want := map[string][]string{
		"en": {"00:00:00,100 → 00:00:01,916 | Hello Zoë. en", "00:00:02,000 → 00:00:02,900 | Bonjour. fr"},
		"fr": {"00:00:00,100 → 00:00:01,500 | Bonjour Zoë. fr"},
	}
	if tracks[0].Language != "en" || tracks[0].Translation || tracks[1].Language != "fr" || !tracks[1].Translation {
		t.Errorf("tracks %+v", tracks)
	}
	for lang, w := range want {
		if strings.Join(got[lang], "\n") != strings.Join(w, "\n") {
			t.Errorf("%s: %q, want %q", lang, got[lang], w)
		}
	}
	if tr, err := FromResult(&api.Result{}, DefaultProfile()); err != nil || tr != nil {
		t.Errorf("empty result: %v %v", tr, err)
	}
}
