package sandboxtest

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sandbox/audio"
)

// A world NewWorld starts serves the recording and its sidecar, and is gone once the test that
// started it has ended.
func TestNewWorldClosesAtTheEndOfTheTest(t *testing.T) {
	rec, err := Synthesize("a.wav", "one two", "three")
	if err != nil {
		t.Fatal(err)
	}
	var audioURL, serviceURL string
	t.Run("world", func(t *testing.T) {
		w := NewWorld(t, sandbox.Config{APIKey: "k"}, rec)
		audioURL, serviceURL = w.Files.AudioURL, w.Service.URL
		for _, u := range []string{audioURL, audioURL + ".json"} {
			resp, err := http.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK || len(b) == 0 {
				t.Errorf("GET %s: %d, %d bytes", u, resp.StatusCode, len(b))
			}
		}
	})
	for _, u := range []string{audioURL, serviceURL} {
		if resp, err := http.Get(u); err == nil {
			_ = resp.Body.Close()
			t.Errorf("%s still answers after the test", u)
		}
	}
}

// Synthesize's sidecar holds each sentence as one utterance of its words, and its WAV is a
// 16 kHz mono recording that outlasts the last word.
func TestSynthesize(t *testing.T) {
	rec, err := Synthesize("b.wav", "Hello there", "General  Kenobi again")
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		Utterances []struct {
			Words []struct {
				Word       string
				Start, End float64
			}
		}
	}
	if err := json.Unmarshal(rec.Sidecar, &sc); err != nil {
		t.Fatal(err)
	}
	if len(sc.Utterances) != 2 || len(sc.Utterances[0].Words) != 2 || len(sc.Utterances[1].Words) != 3 ||
		sc.Utterances[1].Words[0].Word != "General" || sc.Utterances[1].Words[0].Start != 1.9 {
		t.Fatalf("sidecar = %s", rec.Sidecar)
	}
	a, err := audio.DecodeBytes(rec.WAV, audio.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	last := sc.Utterances[1].Words[2].End
	if a.SampleRate != 16000 || a.Channels != 1 || a.Seconds() <= last {
		t.Errorf("WAV: %d Hz, %d channels, %s; the last word ends at %.1f s", a.SampleRate, a.Channels, a.Duration(), last)
	}
}
