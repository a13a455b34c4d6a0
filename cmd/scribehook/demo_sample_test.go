package main

import (
	"bufio"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/sandbox/audio"
)

// sampleScript is what the bundled sample says: the words of its sidecar, in order.
func sampleScript(t testing.TB) []string {
	t.Helper()
	var side struct {
		Utterances []struct {
			Start, End float64
			Words      []struct {
				Word       string
				Start, End float64
			}
		}
	}
	b, err := demodata.ReadFile("demodata/sample.wav.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &side); err != nil {
		t.Fatal(err)
	}
	var words []string
	for _, u := range side.Utterances {
		for _, w := range u.Words {
			words = append(words, w.Word)
		}
	}
	return words
}

// TestDemoSampleIsWhatTheEngineNeeds checks the bundled sample against what recognising it
// takes (the pocketsphinx en-us model hears 16 kHz speech; 8 kHz speech came back as
// nonsense), against the script that made it, and against the size a repository should carry.
func TestDemoSampleIsWhatTheEngineNeeds(t *testing.T) {
	wav, err := demodata.ReadFile("demodata/sample.wav")
	if err != nil {
		t.Fatal(err)
	}
	head, err := audio.ParseHeader(wav)
	if err != nil {
		t.Fatal(err)
	}
	if f := head.Format; f.SampleRate != 16000 || f.Channels != 1 || f.BitDepth != 16 {
		t.Errorf("sample format %+v, want 16 kHz mono 16-bit", f)
	}
	if len(wav) > 400_000 {
		t.Errorf("sample is %d bytes: keep it under 400 KB", len(wav))
	}
	seconds := float64(len(wav)-int(head.DataOffset)) / float64(head.Format.SampleRate*head.Format.FrameSize())

	// The sidecar's words are the script's phrases, at times inside the audio, in order.
	src := readFile(t, "../../scripts/make-sample.py")
	var script []string
	for _, p := range pyList(t, string(src), "PHRASES") {
		script = append(script, regexp.MustCompile(`[A-Za-z']+`).FindAllString(p, -1)...)
	}
	if got := sampleScript(t); !slices.Equal(got, script) {
		t.Errorf("sidecar words %q, make-sample.py's phrases %q: run scripts/make-sample.py", got, script)
	}
	var side struct {
		Utterances []struct {
			Start, End float64
			Words      []struct{ Start, End float64 }
		}
	}
	b, _ := demodata.ReadFile("demodata/sample.wav.json")
	if err := json.Unmarshal(b, &side); err != nil {
		t.Fatal(err)
	}
	last := 0.0
	for i, u := range side.Utterances {
		if len(u.Words) == 0 || u.Start != u.Words[0].Start || u.End != u.Words[len(u.Words)-1].End {
			t.Errorf("utterance %d: %v–%v does not span its words", i, u.Start, u.End)
		}
		for _, w := range u.Words {
			if w.Start < last || w.End <= w.Start || w.End > seconds {
				t.Errorf("utterance %d: word at %v–%v after %v, in %.3f s of audio", i, w.Start, w.End, last, seconds)
			}
			last = w.End
		}
	}

	// The vocabulary the demo sends is the script's list, and it is what the dictionary lacks:
	// every other word can be recognised, and no listed word is there for nothing.
	if vocab := pyList(t, string(src), "VOCABULARY"); !slices.Equal(vocab, demoVocabulary) {
		t.Errorf("make-sample.py's VOCABULARY %q, the demo's %q", vocab, demoVocabulary)
	}
	const dictPath = "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict"
	dict, err := os.Open(dictPath)
	if err != nil {
		t.Skipf("no pocketsphinx dictionary to check the words against (apt-get install pocketsphinx-en-us): %v", err)
	}
	defer dict.Close()
	known := map[string]bool{}
	sc := bufio.NewScanner(dict)
	for sc.Scan() {
		if word, _, ok := strings.Cut(sc.Text(), " "); ok {
			known[word] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, w := range script {
		w = strings.ToLower(w)
		if known[w] == slices.Contains(demoVocabulary, w) {
			t.Errorf("%q: in the dictionary %v, in the demo's vocabulary %v: each word must be in exactly one", w, known[w], known[w])
		}
	}
}

// pyList reads a list of string literals assigned to name in a Python source.
func pyList(t testing.TB, src, name string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?ms)^` + name + ` = \[(.*?)\]`).FindStringSubmatch(src)
	if m == nil {
		t.Fatalf("make-sample.py has no %s list", name)
	}
	var out []string
	for _, s := range regexp.MustCompile(`"([^"]*)"`).FindAllStringSubmatch(m[1], -1) {
		out = append(out, s[1])
	}
	return out
}
