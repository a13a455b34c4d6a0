package subtitles

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/api"
)

// speakerCues is a diarized exchange of three speakers, far enough apart that no two share
// a cue, with speakers 0 and 1 named and 2 not.
func speakerCues(t *testing.T, names api.SpeakerNames) []Cue {
	t.Helper()
	return segment(t, []api.Utterance{
		{Speaker: speaker(0), Words: words("Welcome 1.0 1.4|back. 1.5 1.9")},
		{Speaker: speaker(1), Words: words("Thanks 4.0 4.4|Alice. 4.5 5.0")},
		{Speaker: speaker(2), Words: words("Hello. 8.0 8.6")},
	}, DefaultProfile().WithSpeakerNames(names))
}

// Names show in every format: a label at each turn (unnamed speakers keep "Speaker N+1"),
// WebVTT voice spans, the SSA/ASS Name field; exact bytes.
func TestRenderSpeakerNames(t *testing.T) {
	cues := speakerCues(t, api.SpeakerNames{0: "Alice Martin", 1: "Bob Stone"})
	srt := "1\n00:00:01,000 --> 00:00:02,350\nAlice Martin: Welcome back.\n\n" +
		"2\n00:00:04,000 --> 00:00:05,200\nBob Stone: Thanks Alice.\n\n" +
		"3\n00:00:08,000 --> 00:00:08,850\nSpeaker 3: Hello.\n"
	vtt := "WEBVTT\n\n1\n00:00:01.000 --> 00:00:02.350\n<v Alice Martin>Alice Martin: Welcome back.\n\n" +
		"2\n00:00:04.000 --> 00:00:05.200\n<v Bob Stone>Bob Stone: Thanks Alice.\n\n" +
		"3\n00:00:08.000 --> 00:00:08.850\n<v Speaker 3>Speaker 3: Hello.\n"
	ttml := `<tt xmlns="http://www.w3.org/ns/ttml" xmlns:ttm="http://www.w3.org/ns/ttml#metadata" xmlns:tts="http://www.w3.org/ns/ttml#styling">` + "\n" +
		"    <head>\n        <styling></styling>\n        <layout></layout>\n    </head>\n    <body>\n        <div>\n" +
		`            <p begin="00:00:01.000" end="00:00:02.350">` + "\n                <span>Alice Martin: Welcome back.</span>\n            </p>\n" +
		`            <p begin="00:00:04.000" end="00:00:05.200">` + "\n                <span>Bob Stone: Thanks Alice.</span>\n            </p>\n" +
		`            <p begin="00:00:08.000" end="00:00:08.850">` + "\n                <span>Speaker 3: Hello.</span>\n            </p>\n" +
		"        </div>\n    </body>\n</tt>\n"
	dialogue := "Dialogue: Marked=0,00:00:01.00,00:00:02.35,Default,Alice Martin,0,0,0,,Alice Martin: Welcome back.\n" +
		"Dialogue: Marked=0,00:00:04.00,00:00:05.20,Default,Bob Stone,0,0,0,,Bob Stone: Thanks Alice.\n" +
		"Dialogue: Marked=0,00:00:08.00,00:00:08.85,Default,Speaker 3,0,0,0,,Speaker 3: Hello.\n"
	for _, tc := range []struct {
		f    Format
		want string
	}{{SRT, srt}, {VTT, vtt}, {TTML, ttml}} {
		if got := render(t, cues, tc.f, Options{}); got != tc.want {
			t.Errorf("%s\n%q\nwant\n%q", tc.f, got, tc.want)
		}
	}
	for _, f := range []Format{SSA, ASS} {
		head, want := "Format: Marked", "Format: Marked, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n"+dialogue
		if f == ASS {
			head, want = "Format: Layer", "Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n"+
				strings.ReplaceAll(dialogue, "Marked=0", "0")
		}
		got := render(t, cues, f, Options{})
		if i := strings.LastIndex(got, head); i < 0 || got[i:] != want {
			t.Errorf("%s events\n%q\nwant\n%q", f, got, want)
		}
	}
	// STL is binary: its bytes against a golden file (go test -run SpeakerNames -update), and
	// its text blocks read back.
	got := render(t, cues, STL, Options{})
	path := filepath.Join("testdata", "speakers.stl")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("STL differs from %s", path)
	}
	for _, label := range []string{"Alice Martin: Welcome back.", "Bob Stone: Thanks Alice.", "Speaker 3: Hello."} {
		if !bytes.Contains([]byte(got), []byte(label)) {
			t.Errorf("STL lacks %q", label)
		}
	}
}

// Without names nothing changes: no labels, the default voice names.
func TestRenderNoSpeakerNames(t *testing.T) {
	cues := speakerCues(t, nil)
	want := "1\n00:00:01,000 --> 00:00:01,900\nWelcome back.\n\n2\n00:00:04,000 --> 00:00:05,000\nThanks Alice.\n\n" +
		"3\n00:00:08,000 --> 00:00:08,834\nHello.\n"
	if got := render(t, cues, SRT, Options{}); got != want {
		t.Errorf("SRT\n%q\nwant\n%q", got, want)
	}
	if got := render(t, cues, VTT, Options{}); !bytes.Contains([]byte(got), []byte("<v Speaker 1>Welcome back.\n")) {
		t.Errorf("WebVTT %q", got)
	}
}

// A name that would break a file is cleaned where it is written: WebVTT's annotation escapes
// &, < and >, SRT a "<" that reads as a tag, SSA's Name field loses its commas; a label longer than half a line is left out
// while the voice keeps the name.
func TestRenderSpeakerNameEdges(t *testing.T) {
	long := "Dr. Maximilian Alexander von Hohenberg-Wittelsbach"
	cues := segment(t, []api.Utterance{
		{Speaker: speaker(0), Words: words("Hi. 1.0 1.4")},
		{Speaker: speaker(1), Words: words("Hello. 4.0 4.6")},
	}, DefaultProfile().WithSpeakerNames(api.SpeakerNames{0: "Tom & <Jerry>, Jr.", 1: long}))
	vtt := "WEBVTT\n\n1\n00:00:01.000 --> 00:00:01.900\n<v Tom &amp; &lt;Jerry&gt;, Jr.>Tom &amp; &lt;Jerry&gt;, Jr.: Hi.\n\n" +
		"2\n00:00:04.000 --> 00:00:04.834\n<v " + long + ">Hello.\n"
	if got := render(t, cues, VTT, Options{}); got != vtt {
		t.Errorf("WebVTT\n%q\nwant\n%q", got, vtt)
	}
	if err := ValidateVTT([]byte(vtt)); err != nil {
		t.Error(err)
	}
	srt := "1\n00:00:01,000 --> 00:00:01,900\nTom & &lt;Jerry>, Jr.: Hi.\n\n2\n00:00:04,000 --> 00:00:04,834\nHello.\n"
	if got := render(t, cues, SRT, Options{}); got != srt {
		t.Errorf("SRT\n%q\nwant\n%q", got, srt)
	}
	if got := render(t, cues, ASS, Options{}); !bytes.Contains([]byte(got), []byte(",Default,Tom & <Jerry>  Jr.,0,0,0,,")) {
		t.Errorf("ASS Name field: %q", got)
	}
}
