package api_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/api"
)

func TestParseSpeakerNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want api.SpeakerNames
		errs []string
	}{
		{"two names", `{"0": "Alice Martin", "1": "Bob Stone"}`, api.SpeakerNames{0: "Alice Martin", 1: "Bob Stone"}, nil},
		{"trimmed", `{"3": "  Zoë  "}`, api.SpeakerNames{3: "Zoë"}, nil},
		{"empty object clears", `{}`, api.SpeakerNames{}, nil},
		{"highest number", `{"99": "X"}`, api.SpeakerNames{99: "X"}, nil},
		{"not an object", `["Alice"]`, nil, []string{`body must be one JSON object of speaker numbers to names, e.g. {"0": "Alice Martin"}`}},
		{"null", `null`, nil, []string{`body must be one JSON object of speaker numbers to names, e.g. {"0": "Alice Martin"}`}},
		{"two objects", `{} {}`, nil, []string{`body must be one JSON object of speaker numbers to names, e.g. {"0": "Alice Martin"}`}},
		{"negative", `{"-1": "A"}`, nil, []string{`speaker "-1" must be a speaker number from 0 to 99, written in decimal`}},
		{"leading zero", `{"01": "A"}`, nil, []string{`speaker "01" must be a speaker number from 0 to 99, written in decimal`}},
		{"too high", `{"100": "A"}`, nil, []string{`speaker "100" must be a speaker number from 0 to 99, written in decimal`}},
		{"word key", `{"alice": "A"}`, nil, []string{`speaker "alice" must be a speaker number from 0 to 99, written in decimal`}},
		{"not a string", `{"0": 5}`, nil, []string{`speaker "0" must be a string`}},
		{"empty name", `{"0": "  "}`, nil, []string{`speaker "0" must not be empty`}},
		{"line break", `{"0": "A\nB"}`, nil, []string{`speaker "0" must not contain control or formatting characters (line breaks, tabs, bidirectional marks)`}},
		{"bidi override", `{"0": "A\u202eB"}`, nil, []string{`speaker "0" must not contain control or formatting characters (line breaks, tabs, bidirectional marks)`}},
		{"too long", `{"0": "` + strings.Repeat("é", 65) + `"}`, nil, []string{`speaker "0" must be at most 64 characters`}},
		{"every error at once", `{"1": "", "0": 1, "x": "A"}`, nil, []string{
			`speaker "0" must be a string`, `speaker "x" must be a speaker number from 0 to 99, written in decimal`, `speaker "1" must not be empty`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := api.ParseSpeakerNames([]byte(tc.body))
			if tc.errs == nil {
				if err != nil || !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got %v, %v; want %v", got, err, tc.want)
				}
				return
			}
			var ve api.ValidationErrors
			if !errors.As(err, &ve) || !errors.Is(err, api.ErrValidation) {
				t.Fatalf("err %v (%T), want ValidationErrors", err, err)
			}
			if !reflect.DeepEqual(ve.Sentences(), tc.errs) {
				t.Fatalf("errors %q\nwant %q", ve.Sentences(), tc.errs)
			}
		})
	}
}

func TestSpeakerNamesJSON(t *testing.T) {
	b, err := json.Marshal(api.SpeakerNames{10: "Ten", 2: "Two"})
	if err != nil || string(b) != `{"10":"Ten","2":"Two"}` {
		t.Fatalf("got %s, %v", b, err)
	}
	if b, _ = json.Marshal(api.SpeakerNames(nil)); string(b) != `{}` {
		t.Fatalf("nil names: %s", b)
	}
	back, err := api.ParseSpeakerNames(b)
	if err != nil || len(back) != 0 {
		t.Fatalf("round trip: %v, %v", back, err)
	}
}

func TestSpeakerNamesFromMetadata(t *testing.T) {
	for _, tc := range []struct {
		md   string
		want api.SpeakerNames
		err  string
	}{
		{``, nil, ""},
		{`{"user": "a"}`, nil, ""},
		{`"scribehook_speakers"`, nil, ""},
		{`{"scribehook_speakers": {"0": "Alice"}, "user": "a"}`, api.SpeakerNames{0: "Alice"}, ""},
		{`{"scribehook_speakers": {"0": ""}}`, nil, `custom_metadata.scribehook_speakers: speaker "0" must not be empty`},
	} {
		got, err := api.SpeakerNamesFromMetadata(json.RawMessage(tc.md))
		if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, %v; want %v, %q", tc.md, got, err, tc.want, tc.err)
		}
	}
}

func TestSpeakerNamesMerge(t *testing.T) {
	got := api.SpeakerNames{0: "A", 1: "B"}.Merge(api.SpeakerNames{1: "Bob", 2: "C"})
	if !reflect.DeepEqual(got, api.SpeakerNames{0: "A", 1: "Bob", 2: "C"}) {
		t.Fatal(got)
	}
	if api.SpeakerNames(nil).Merge(nil) != nil {
		t.Fatal("empty merge is not nil")
	}
}

// FuzzParseSpeakerNames: the body of PUT /v1/jobs/{id}/speakers is outside input. Whatever it
// is, the parser returns valid names or a validation error that quotes no more than a short,
// printable key, and valid names survive their own JSON.
func FuzzParseSpeakerNames(f *testing.F) {
	for _, s := range []string{
		`{"0": "Alice Martin", "1": "Bob Stone"}`, `{}`, `null`, `[]`, `{"-1": "x"}`, `{"01": "x"}`,
		`{"0": "a\u202eb"}`, `{"0": 1}`, `{"0": "a", "0": "b"}`, `{"99": " Zoë "}`, "{\"0\": \"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		names, err := api.ParseSpeakerNames(body)
		if err != nil {
			if !errors.Is(err, api.ErrValidation) {
				t.Fatalf("error is not a validation error: %v", err)
			}
			if names != nil {
				t.Fatalf("names with an error: %v", names)
			}
			return
		}
		if err := names.Validate(); err != nil {
			t.Fatalf("parsed names do not validate: %v", err)
		}
		b, err := json.Marshal(names)
		if err != nil {
			t.Fatal(err)
		}
		back, err := api.ParseSpeakerNames(b)
		if err != nil || !back.Equal(names) {
			t.Fatalf("round trip of %s: %v, %v", b, back, err)
		}
	})
}
