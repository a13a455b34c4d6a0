package subtitles

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asticode/go-astisub"
	"github.com/scribehook/scribehook/api"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func render(t *testing.T, cues []Cue, f Format, o Options) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, cues, f, o); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func segment(t *testing.T, utts []api.Utterance, p Profile) []Cue {
	t.Helper()
	cues, _, err := Segment(utts, p)
	if err != nil {
		t.Fatal(err)
	}
	return cues
}

// Exact files: SRT numbered from 1, no BOM, LF; WebVTT with <v> on every cue, closed in
// the dual cue; escaping per format.
func TestRenderGolden(t *testing.T) {
	cues := segment(t, []api.Utterance{
		{Speaker: speaker(0), Words: words("Ready? 1.0 1.4")},
		{Speaker: speaker(1), Words: words("Yes. 1.5 1.7")},
		{Speaker: speaker(0), Words: words("AT&T 4.0 4.4|<inaudible> 4.5 5.0|a --> b 5.1 5.4|x>y 5.5 5.7|&amp; 5.8 6.0|<3 6.1 6.3")},
	}, DefaultProfile())
	srt := "1\n00:00:01,000 --> 00:00:01,834\n-Ready?\n-Yes.\n\n" +
		"2\n00:00:04,000 --> 00:00:06,300\nAT&T &lt;inaudible> a → b x>y &amp;amp; <3\n"
	vtt := "WEBVTT\n\n1\n00:00:01.000 --> 00:00:01.834\n<v Speaker 1>-Ready?</v>\n<v Speaker 2>-Yes.</v>\n\n" +
		"2\n00:00:04.000 --> 00:00:06.300\n<v Speaker 1>AT&amp;T &lt;inaudible&gt; a → b x&gt;y &amp;amp; &lt;3\n"
	if got := render(t, cues, SRT, Options{}); got != srt {
		t.Errorf("SRT\n%q\nwant\n%q", got, srt)
	}
	if got := render(t, cues, VTT, Options{}); got != vtt {
		t.Errorf("WebVTT\n%q\nwant\n%q", got, vtt)
	}
	if got := render(t, cues, SRT, Options{CRLF: true, BOM: true}); got != "\uFEFF"+strings.ReplaceAll(srt, "\n", "\r\n") {
		t.Errorf("SRT with CRLF and BOM: %q", got)
	}
	if got := render(t, cues, VTT, Options{CRLF: true}); got != strings.ReplaceAll(vtt, "\n", "\r\n") {
		t.Errorf("WebVTT with CRLF: %q", got)
	}
	for _, o := range []Options{{}, {CRLF: true}, {BOM: true}} {
		if err := ValidateSRT([]byte(render(t, cues, SRT, o))); err != nil {
			t.Error(err)
		}
		if err := ValidateVTT([]byte(render(t, cues, VTT, o))); err != nil {
			t.Error(err)
		}
	}
}

// Speaker names are escaped inside <v …> and cleaned of line breaks.
func TestRenderVoiceEscaping(t *testing.T) {
	cues := []Cue{{Start: time.Second, End: 2 * time.Second, Lines: []string{"Hi", "there"}, Speakers: []string{"Tom & <Jerry>\n", "x"}}}
	want := "WEBVTT\n\n1\n00:00:01.000 --> 00:00:02.000\n<v Tom &amp; &lt;Jerry&gt;>Hi\nthere\n"
	if got := render(t, cues, VTT, Options{}); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if err := ValidateVTT([]byte(want)); err != nil {
		t.Error(err)
	}
}

// The sample transcript of the demo, as golden files (go test -run Sample -update rewrites
// them).
func TestRenderSampleGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/sample.json")
	if err != nil {
		t.Fatal(err)
	}
	var tr api.Transcription
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	cues := segment(t, tr.Utterances, DefaultProfile())
	for _, f := range []Format{SRT, VTT, TTML, SSA, ASS} {
		got := render(t, cues, f, Options{Title: "sample"})
		path := filepath.Join("testdata", "sample"+f.Extension())
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s differs from %s:\n%s", f, path, got)
		}
	}
}

// Every format astisub writes reads back with astisub: same number of cues, same times
// (to the format's precision), same text (STL: what its alphabet can hold).
func TestRenderAllFormatsParseBack(t *testing.T) {
	cues := segment(t, benchTranscript(400), DefaultProfile())
	cues = append(cues, Cue{Start: cues[len(cues)-1].End + time.Second, End: cues[len(cues)-1].End + 3*time.Second,
		Lines: []string{"Zoë & café {x} \\N"}, Speakers: []string{"A, B"}})
	for _, f := range Formats() {
		var buf bytes.Buffer
		if err := Render(&buf, cues, f, Options{Title: "t"}); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var subs *astisub.Subtitles
		var err error
		precision := time.Millisecond
		switch f {
		case SRT:
			subs, err = astisub.ReadFromSRT(&buf)
		case VTT:
			subs, err = astisub.ReadFromWebVTT(&buf)
		case TTML:
			subs, err = astisub.ReadFromTTML(&buf)
		case SSA, ASS:
			subs, err = astisub.ReadFromSSA(&buf)
			precision = 10 * time.Millisecond
		case STL:
			subs, err = astisub.ReadFromSTL(&buf, astisub.STLOptions{})
			precision = 40 * time.Millisecond // frames at 25 fps
		}
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(subs.Items) != len(cues) {
			t.Fatalf("%s: %d cues read back, want %d", f, len(subs.Items), len(cues))
		}
		for i, it := range subs.Items {
			if d := cues[i].Start - it.StartAt; d < 0 || d >= precision {
				t.Errorf("%s cue %d: start %v, want %v", f, i, it.StartAt, cues[i].Start)
			}
			if d := cues[i].End - it.EndAt; d < 0 || d >= precision {
				t.Errorf("%s cue %d: end %v, want %v", f, i, it.EndAt, cues[i].End)
			}
			var lines []string
			for _, l := range it.Lines {
				var sb strings.Builder
				for _, li := range l.Items {
					sb.WriteString(li.Text)
				}
				lines = append(lines, strings.TrimSpace(strings.TrimPrefix(sb.String(), "\x0b")))
			}
			want := cues[i].Lines
			if i == len(cues)-1 {
				switch f {
				case SSA, ASS:
					want = []string{"Zoë & café (x) ⧵N"}
				case TTML:
					want = []string{strings.Join(want, "")} // astisub reads the <br/>-separated spans back as one line
				}
			}
			if f == TTML && len(lines) == 1 && len(want) > 1 {
				want = []string{strings.Join(want, "")}
			}
			if strings.Join(lines, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s cue %d: %q, want %q", f, i, lines, want)
			}
		}
	}
}

// The same cues always give the same bytes, whatever the format.
func TestRenderDeterministic(t *testing.T) {
	cues := segment(t, benchTranscript(300), DefaultProfile())
	for _, f := range Formats() {
		a, b := render(t, cues, f, Options{}), render(t, cues, f, Options{})
		if a != b {
			t.Errorf("%s: two renders differ", f)
		}
	}
}

func TestRenderSTLText(t *testing.T) {
	if got := stlText("\u0301café 😀 你好 Łódź ♪"); got != "café ? ?? Łódź ♪" {
		t.Errorf("stlText = %q", got)
	}
	long := []Cue{{Start: 0, End: time.Second, Lines: []string{strings.Repeat("x", 60), strings.Repeat("y", 60)}}}
	if err := Render(&bytes.Buffer{}, long, STL, Options{}); !errors.Is(err, ErrInvalidCues) {
		t.Errorf("STL with 121 bytes of text: %v", err)
	}
}

func TestRenderEmptyAndInvalid(t *testing.T) {
	if got := render(t, nil, SRT, Options{}); got != "" {
		t.Errorf("empty SRT %q", got)
	}
	if got := render(t, nil, VTT, Options{}); got != "WEBVTT\n" {
		t.Errorf("empty WebVTT %q", got)
	}
	if err := ValidateVTT([]byte("WEBVTT\n")); err != nil {
		t.Error(err)
	}
	if err := ValidateSRT(nil); err != nil {
		t.Error(err)
	}
	if err := Render(&bytes.Buffer{}, nil, TTML, Options{}); !errors.Is(err, astisub.ErrNoSubtitlesToWrite) {
		t.Errorf("empty TTML: %v", err)
	}
	for name, cues := range map[string][]Cue{
		"end before start": {{Start: 2 * time.Second, End: time.Second, Lines: []string{"x"}}},
		"equal ms":         {{Start: time.Second, End: time.Second + 400*time.Microsecond, Lines: []string{"x"}}},
		"negative":         {{Start: -time.Second, End: time.Second, Lines: []string{"x"}}},
		"unsorted":         {{Start: 3 * time.Second, End: 4 * time.Second, Lines: []string{"x"}}, {Start: time.Second, End: 2 * time.Second, Lines: []string{"y"}}},
		"no text":          {{Start: time.Second, End: 2 * time.Second, Lines: []string{" ", "\n"}}},
	} {
		if err := Render(&bytes.Buffer{}, cues, VTT, Options{}); !errors.Is(err, ErrInvalidCues) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := Render(&bytes.Buffer{}, []Cue{{End: time.Second, Lines: []string{"x"}}}, "docx", Options{}); err == nil {
		t.Error("unknown format accepted")
	}
	// Lines from elsewhere are sanitised: a blank line or "-->" would end the cue.
	cues := []Cue{{Start: time.Second, End: 2 * time.Second, Lines: []string{"a\n\nb --> c", "d\re"}}}
	if got := render(t, cues, SRT, Options{}); got != "1\n00:00:01,000 --> 00:00:02,000\na b → c\nd e\n" {
		t.Errorf("sanitised SRT %q", got)
	}
	// Sub-millisecond times are rounded, not floored as astisub would.
	cues = []Cue{{Start: 1999999 * time.Microsecond, End: 2999600 * time.Microsecond, Lines: []string{"x"}}}
	if got := render(t, cues, SRT, Options{}); !strings.Contains(got, "00:00:02,000 --> 00:00:03,000") {
		t.Errorf("rounding: %q", got)
	}
}

func TestFormats(t *testing.T) {
	for _, f := range Formats() {
		if g, err := ParseFormat(strings.ToUpper(string(f))); err != nil || g != f {
			t.Errorf("ParseFormat(%s) = %v, %v", f, g, err)
		}
		if f.ContentType() == "" || f.Extension() != "."+string(f) {
			t.Errorf("%s: %q %q", f, f.ContentType(), f.Extension())
		}
	}
	if f, _ := ParseFormat(".webvtt"); f != VTT {
		t.Error("webvtt alias")
	}
	if _, err := ParseFormat("docx"); err == nil {
		t.Error("docx accepted")
	}
}
