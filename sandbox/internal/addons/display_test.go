package addons

import (
	"fmt"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/api"
)

func TestDisplayMode(t *testing.T) {
	cases := []struct {
		name string
		tr   *api.Transcription
		want []string
	}{
		{"one line per utterance, by start time", transcript(
			utt(1, "Second.", w("Second.", 2, 3)),
			utt(0, "First one.", w("first", 0, 0.5), w(" one", 0.6, 1)),
		), []string{"Speaker 0: First one.", "Speaker 1: Second."}},
		{"overlap splits the interrupted utterance", transcript(
			utt(0, "One two three four.",
				w("One", 0, 1), w(" two", 1, 2), w(" three", 3, 4), w(" four.", 5, 6)),
			utt(1, "Yes.", w("Yes", 2.2, 2.6), w(".", 2.6, 2.8)),
			utt(0, "Bye.", w("Bye.", 7, 8)),
		), []string{"Speaker 0: One two", "Speaker 1: Yes.", "Speaker 0: three four.", "Speaker 0: Bye."}},
		{"no speaker: channel", &api.Transcription{Utterances: []api.Utterance{
			{Channel: 1, Start: 0, End: 1, Text: " Left  channel "},
		}}, []string{"Speaker 1: Left channel"}},
		{"empty", &api.Transcription{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := DisplayMode(c.tr)
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestDiarize(t *testing.T) {
	// Engine speakers by start time: 5, 2, 7, 2, none (channel 1).
	tr := transcript(
		utt(7, "c", w("c", 2, 2.5)),
		utt(5, "a", w("a", 0, 0.5)),
		utt(2, "b", w("b", 1, 1.5)),
		utt(2, "d", w("d", 3, 3.5)),
		utt(-1, "e", w("e", 4, 4.5)),
	)
	tr.Utterances[4].Channel = 1
	cases := []struct {
		name string
		cfg  *api.DiarizationConfig
		want string // speakers in the transcription's order (c a b d e)
	}{
		{"no config keeps engine speakers", nil, "7 5 2 2 1"},
		{"limit not reached", &api.DiarizationConfig{MaxSpeakers: api.Int(4)}, "7 5 2 2 1"},
		// First appearance: 5→0, 2→1, 7→2, 1→3; then modulo 2.
		{"max_speakers folds", &api.DiarizationConfig{MaxSpeakers: api.Int(2)}, "0 0 1 1 1"},
		{"number_of_speakers wins", &api.DiarizationConfig{NumberOfSpeakers: api.Int(3), MaxSpeakers: api.Int(2)}, "2 0 1 1 0"},
		{"max_speakers 0 is no limit", &api.DiarizationConfig{MaxSpeakers: api.Int(0)}, "7 5 2 2 1"},
		{"one speaker", &api.DiarizationConfig{NumberOfSpeakers: api.Int(1)}, "0 0 0 0 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, u := range Diarize(tr, c.cfg) {
				got = append(got, fmt.Sprint(*u.Speaker))
			}
			if strings.Join(got, " ") != c.want {
				t.Errorf("got %s, want %s", strings.Join(got, " "), c.want)
			}
		})
	}
	if tr.Utterances[4].Speaker != nil || *tr.Utterances[0].Speaker != 7 {
		t.Error("input speakers changed")
	}
}
