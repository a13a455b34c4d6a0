package api

import (
	"encoding/json"
	"testing"
)

// The chapterization add-on, the post_chapterization message and the named_entity_recognition
// add-on each arrive in two forms (provider-facts.md, issue 27); every form decodes, and
// encodes back in the one form scribehook writes.

const (
	chapterArrayForm = `{"headline":"Greeting","gist":"Hello","keywords":["hello"],"start":0.1,"end":2.9,` +
		`"sentences":"Hello there.\nHow are you?","text":"Hello there. How are you?"}`
	chapterObjectForm = `{"headline":"Greeting","gist":"Hello","keywords":["hello"],"start":0.1,"end":2.9,` +
		`"sentences":[{"sentence":"Hello there.","start":0.1,"end":1.2,"words":[{"word":"Hello","start":0.1,"end":0.5,"confidence":0.9},{"word":" there.","start":0.6,"end":1.2,"confidence":0.8}]},` +
		`{"sentence":"How are you?","start":1.5,"end":2.9,"words":[]}],"text":"Hello there. How are you?","summary":"Hi."}`
	// chapterFromString is chapterArrayForm as scribehook writes it: sentences without times or
	// words.
	chapterFromString = `{"headline":"Greeting","gist":"Hello","keywords":["hello"],"start":0.1,"end":2.9,` +
		`"sentences":[{"sentence":"Hello there.","start":0,"end":0,"words":[]},{"sentence":"How are you?","start":0,"end":0,"words":[]}],` +
		`"text":"Hello there. How are you?"}`
)

func TestChapterizationResultsForms(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"object", `{"chapters":[` + chapterObjectForm + `]}`, `{"chapters":[` + chapterObjectForm + `]}`},
		{"bare array, sentences a string", `[` + chapterArrayForm + `]`, `{"chapters":[` + chapterFromString + `]}`},
		{"bare array, sentences an array", `[` + chapterObjectForm + `]`, `{"chapters":[` + chapterObjectForm + `]}`},
		{"object, sentences a string", `{"chapters":[` + chapterArrayForm + `]}`, `{"chapters":[` + chapterFromString + `]}`},
		{"empty array", ` [ ] `, `{"chapters":[]}`},
		{"empty object", `{}`, `{"chapters":[]}`},
		{"null", `null`, `{"chapters":[]}`},
		{"unknown members dropped", `{"chapters":[],"model":"x"}`, `{"chapters":[]}`},
		{"blank lines of the string form", `[{"sentences":"\n One. \n\nTwo.\n"}]`,
			`{"chapters":[{"headline":"","gist":"","keywords":[],"start":0,"end":0,"sentences":[` +
				`{"sentence":"One.","start":0,"end":0,"words":[]},{"sentence":"Two.","start":0,"end":0,"words":[]}],"text":""}]}`},
		{"optional summaries kept", `[{"sentences":"","abstractive_summary":"a","extractive_summary":"e"}]`,
			`{"chapters":[{"headline":"","gist":"","keywords":[],"start":0,"end":0,"sentences":[],"text":"",` +
				`"abstractive_summary":"a","extractive_summary":"e"}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r ChapterizationResults
			if err := json.Unmarshal([]byte(c.in), &r); err != nil {
				t.Fatal(err)
			}
			if got := marshalString(t, r); got != c.want {
				t.Errorf("\n got %s\nwant %s", got, c.want)
			}
		})
	}
	for _, bad := range []string{`"chapters"`, `3`, `[1]`, `{"chapters":{}}`, `[{"sentences":3}]`, `[{"sentences":[1]}]`} {
		var r ChapterizationResults
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("%s decoded as %+v", bad, r)
		}
	}
}

func TestChapterizationInResult(t *testing.T) {
	envelope := func(results string) string {
		return `{"chapterization":{"success":true,"is_empty":false,"exec_time":0.4,"error":null,"results":` + results + `}}`
	}
	want := envelope(`{"chapters":[` + chapterFromString + `]}`)
	for _, in := range []string{envelope(`[` + chapterArrayForm + `]`), envelope(`{"chapters":[` + chapterArrayForm + `]}`)} {
		r, err := DecodeResult(json.RawMessage(in))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(RawResult(r)); got != want {
			t.Errorf("%s\n got %s\nwant %s", in, got, want)
		}
	}
}

func TestChapterizationDataForms(t *testing.T) {
	for in, want := range map[string]string{
		`{"results":[` + chapterArrayForm + `]}`:  `{"results":[` + chapterFromString + `]}`,
		`{"results":[` + chapterObjectForm + `]}`: `{"results":[` + chapterObjectForm + `]}`,
	} {
		m := LiveMessage{Type: MessagePostChapterization, Data: json.RawMessage(in)}
		var d ChapterizationData
		if err := m.DecodeData(&d); err != nil {
			t.Fatal(err)
		}
		if got := marshalString(t, d); got != want {
			t.Errorf("\n got %s\nwant %s", got, want)
		}
		if texts := d.Results[0].Sentences.Texts(); len(texts) != 2 || texts[1] != "How are you?" {
			t.Errorf("sentence texts %q", texts)
		}
	}
}

func TestEntityAddonForms(t *testing.T) {
	const head = `{"success":true,"is_empty":false,"exec_time":0.3,"error":null,`
	const sasha = `{"entity_type":"NAME_GIVEN","text":"Sasha","start":1.5,"end":1.9}`
	cases := []struct {
		name, in, want string
	}{
		{"results (the service)", head + `"results":[` + sasha + `]}`, head + `"results":[` + sasha + `]}`},
		{"results null", head + `"results":null}`, head + `"results":null}`},
		{"entity, a JSON text of entities", head + `"entity":"[{\"entity_type\":\"person\",\"text\":\"Zoë\"}]"}`,
			head + `"results":[{"entity_type":"person","text":"Zoë","start":0,"end":0}],"entity":"[{\"entity_type\":\"person\",\"text\":\"Zoë\"}]"}`},
		{"entity, an array", head + `"entity":[` + sasha + `]}`, head + `"results":[` + sasha + `]}`},
		{"entity, free text", head + `"entity":"Sasha (person)"}`, head + `"results":null,"entity":"Sasha (person)"}`},
		{"both: results win", head + `"results":[],"entity":"[` + `{\"text\":\"x\"}]"}`,
			head + `"results":[],"entity":"[{\"text\":\"x\"}]"}`},
		{"entity null", head + `"entity":null}`, head + `"results":null}`},
		{"failed", `{"success":false,"is_empty":true,"exec_time":0,"error":{"status_code":500,"exception":"E","message":"m"},"results":null}`,
			`{"success":false,"is_empty":true,"exec_time":0,"error":{"status_code":500,"exception":"E","message":"m"},"results":null}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var e EntityAddon
			if err := json.Unmarshal([]byte(c.in), &e); err != nil {
				t.Fatal(err)
			}
			if got := marshalString(t, e); got != c.want {
				t.Errorf("\n got %s\nwant %s", got, c.want)
			}
		})
	}
	for _, bad := range []string{head + `"results":"x"}`, head + `"entity":3}`, head + `"entity":"\u"}`, `[]`} {
		var e EntityAddon
		if err := json.Unmarshal([]byte(bad), &e); err == nil {
			t.Errorf("%s decoded as %+v", bad, e)
		}
	}
}

func marshalString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
