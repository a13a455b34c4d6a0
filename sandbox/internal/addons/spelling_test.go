package addons

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/scribehook/scribehook/api"
)

func speller(dict map[string][]string) *Speller {
	return NewSpeller(&api.CustomSpellingConfig{SpellingDictionary: dict})
}

func TestSpellerText(t *testing.T) {
	cases := []struct {
		name string
		dict map[string][]string
		in   string
		want string
	}{
		{"case-insensitive whole word", map[string][]string{"NASA": {"nasa"}},
			"the nasa, Nasa and NASA but not nasal or nasa's", "the NASA, NASA and NASA but not nasal or nasa's"},
		{"multi-word, longest first", map[string][]string{"GPT-4": {"gpt four", "g p t four"}, "G": {"g"}},
			"I like g p t four. And GPT FOUR! g.", "I like GPT-4. And GPT-4! G."},
		{"multi-word needs only spaces between", map[string][]string{"New York": {"new york"}},
			"new, york and new   york", "new, york and New York"},
		{"punctuation kept around", map[string][]string{"Gladys": {"glady's", "gladis"}},
			`"gladis?" (Glady's)`, `"Gladys?" (Gladys)`},
		{"target's final mark not doubled", map[string][]string{"Dr.": {"dr", "doctor"}},
			"doctor. Smith met dr Jones", "Dr. Smith met Dr. Jones"},
		{"unicode", map[string][]string{"Zoë": {"zoe"}, "Ørsted": {"oersted"}},
			"ZOE et OERSTED, zoé", "Zoë et Ørsted, zoé"},
		{"variant punctuation ignored", map[string][]string{"e-mail": {"e mail", "email."}},
			"send an E mail or an email", "send an e-mail or an e-mail"},
		{"no rule", nil, "unchanged text", "unchanged text"},
		{"empty variants and target skipped", map[string][]string{"": {"x"}, "Y": {"", "  ", "?"}},
			"x y", "x y"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := speller(c.dict).Text(c.in); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestSpellerWords(t *testing.T) {
	dict := map[string][]string{"GPT": {"gee pee tee"}, "NASA": {"nasa"}, "New York": {"new york"}}
	in := []api.Word{
		w("Gee", 0, 0.2), w(" pee", 0.3, 0.5), w(" tee,", 0.6, 0.8), // multi-word, comma after
		w(" nasa.", 1.0, 1.4),                      // single word, full stop after
		w(" new,", 2.0, 2.2), w(" york", 2.3, 2.6), // comma inside: no match
		w(" new", 3.0, 3.2), w(" york", 3.3, 3.6),
	}
	in[1].Confidence, in[2].Confidence = 0.6, 0.3
	got := speller(dict).Words(in)
	want := []api.Word{
		{Word: "GPT,", Start: 0, End: 0.8, Confidence: (0.9 + 0.6 + 0.3) / 3},
		{Word: " NASA.", Start: 1.0, End: 1.4, Confidence: 0.9},
		w(" new,", 2.0, 2.2), w(" york", 2.3, 2.6),
		{Word: " New York", Start: 3.0, End: 3.6, Confidence: 0.9},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	if in[0].Word != "Gee" {
		t.Error("input words changed")
	}
}

func TestSpellerTranscription(t *testing.T) {
	in := transcript(
		utt(0, "Hello nasa.", w("Hello", 0, 0.4), w(" nasa.", 0.5, 0.9)),
		utt(1, "new york calling", w("new", 1, 1.2), w(" york", 1.3, 1.5), w(" calling", 1.6, 2)),
	)
	before, _ := json.Marshal(in)
	got := speller(map[string][]string{"NASA": {"nasa"}, "New York": {"new york"}}).Transcription(in)
	if got.FullTranscript != "Hello NASA. New York calling" {
		t.Errorf("full transcript %q", got.FullTranscript)
	}
	if got.Utterances[0].Text != "Hello NASA." || got.Utterances[1].Text != "New York calling" {
		t.Errorf("texts %q, %q", got.Utterances[0].Text, got.Utterances[1].Text)
	}
	if w := got.Utterances[1].Words; len(w) != 2 || w[0].Word != "New York" || w[0].Start != 1 || w[0].End != 1.5 {
		t.Errorf("words %v", w)
	}
	after, _ := json.Marshal(in)
	if string(before) != string(after) {
		t.Error("input transcription changed")
	}
}
