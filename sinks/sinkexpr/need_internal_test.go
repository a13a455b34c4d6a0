package sinkexpr

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// What each expression reads of event.data, written as need.key.
func TestDataNeed(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`event.type == "job.succeeded"`, "-"},
		{`event.custom_metadata.team == "media"`, "-"},
		{`event.data.result.metadata.audio_duration > 60.0`, `{"result":{"metadata":{"audio_duration":*}}}`},
		{`event.type == "job.succeeded" && event.data.result.metadata.audio_duration > 60.0 && event.data.result.transcription.languages[0] == "fr"`,
			`{"result":{"metadata":{"audio_duration":*},"transcription":{"languages":*}}}`},
		{`has(event.data.result.summarization) && !event.data.result.summarization.success`, `{"result":{"summarization":*}}`},
		{`event["data"]["result"].metadata.audio_duration > 1.0`, `{"result":{"metadata":{"audio_duration":*}}}`},
		{`event.data.result.transcription.utterances.exists(u, u.text.contains("refund"))`, `{"result":{"transcription":{"utterances":*}}}`},
		{`event.data.size() > 0`, "*"},
		{`event.data.data.utterance.text.lowerAscii().contains("refund")`, `{"data":{"utterance":{"text":*}}}`},
		{`event.data.result.metadata.audio_duration > 1.0 && event.data.result.metadata.size() > 0`, `{"result":{"metadata":*}}`},
		{`event.data[event.type] == 1`, "*"},
		{`[event].size() == 1`, "*"},
	} {
		p, err := CompileWhen(tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		if p.key != tc.want {
			t.Errorf("%s reads %s, want %s", tc.src, p.key, tc.want)
		}
	}
	p, err := CompileBody(`{"id": event.job_id, "text": event.data.result.transcription.full_transcript}`)
	if err != nil || p.key != `{"result":{"transcription":{"full_transcript":*}}}` {
		t.Errorf("body reads %v (%v)", p.key, err)
	}
}

// decodeNeed keeps exactly the members the need names, decoded as encoding/json decodes them.
func TestDecodeNeed(t *testing.T) {
	raw := `{ "id":"j1", "result" : {"metadata": {"audio_duration": 75.5, "channels": 2},
	  "transcription": {"full_transcript": "a \"quoted\" }{ ][ text", "utterances": [{"text":"x","words":[]}]},
	  "summarization": null}, "re\u0073ult2": {"a": [1, {"b": "}"}]}, "status": "done"}`
	n := &need{}
	n.add([]string{"result", "metadata", "audio_duration"})
	n.add([]string{"result", "transcription", "full_transcript"})
	n.add([]string{"result", "summarization", "success"})
	n.add([]string{"result2"})
	n.add([]string{"missing", "x"})
	got, err := decodeNeed([]byte(raw), n)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"result": map[string]any{
			"metadata":      map[string]any{"audio_duration": 75.5},
			"transcription": map[string]any{"full_transcript": `a "quoted" }{ ][ text`},
			"summarization": nil, // not an object: decoded as it is
		},
		"result2": map[string]any{"a": []any{1.0, map[string]any{"b": "}"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decodeNeed =\n%#v\nwant\n%#v", got, want)
	}
	// Malformed input: the full decoder's error.
	if _, err := decodeNeed([]byte(`{"result": {"metadata": }`), n); err == nil || !strings.Contains(err.Error(), "invalid character") {
		t.Errorf("malformed: %v", err)
	}
}

// prune is the part of the fully decoded v that n reads: what decodeNeed must give.
func prune(v any, n *need) any {
	if n == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if n.all || !ok {
		return v
	}
	out := map[string]any{}
	for k, kid := range n.kids {
		if x, ok := m[k]; ok {
			out[k] = prune(x, kid)
		}
	}
	return out
}

// FuzzDecodeNeed: for any JSON that encoding/json decodes, decodeNeed gives the full decoding
// pruned to the need, and an expression evaluates the same over either.
func FuzzDecodeNeed(f *testing.F) {
	f.Add(`{"result":{"metadata":{"audio_duration":75.5}}}`, "result.metadata.audio_duration")
	f.Add(`{"a":{"b":[1,2,{"c":"}"}]},"a":{"b":"dup"}}`, "a.b")
	f.Add(`{"k\u0065y":{"x":"\\\""}, "key": 1}`, "key.x")
	f.Add(`[{"a":1}]`, "a")
	f.Add(`{"a": true , "b" :null,"c":-1.5e3}`, "c")
	f.Fuzz(func(t *testing.T, raw, path string) {
		var full any
		if json.Unmarshal([]byte(raw), &full) != nil {
			return
		}
		n := &need{}
		if path != "" {
			n.add(strings.Split(path, "."))
		} else {
			n.add(nil)
		}
		got, err := decodeNeed([]byte(raw), n)
		if err != nil {
			t.Fatalf("decodeNeed(%q, %s): %v", raw, path, err)
		}
		if want := prune(full, n); !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeNeed(%q, %s) =\n%#v\nwant\n%#v", raw, path, got, want)
		}
	})
}

// An expression gives the same over the pruned data as over the whole.
func TestPrunedEvaluatesAsWhole(t *testing.T) {
	data := `{"id":"j1","result":{"metadata":{"audio_duration":75.5},"transcription":{"full_transcript":"bonjour",` +
		`"languages":["fr"],"utterances":[{"text":"we want a refund","words":[{"word":"refund"}]}]},"summarization":{"success":false}}}`
	for _, tc := range []struct {
		src  string
		want bool
	}{
		{`event.data.result.metadata.audio_duration > 60.0`, true},
		{`event.data.result.transcription.utterances.exists(u, u.words.exists(w, w.word == "refund"))`, true},
		{`has(event.data.result.summarization) && !event.data.result.summarization.success`, true},
		{`has(event.data.result.translation)`, false},
		{`event.data.result.transcription.languages.size() == 1 && event.data.id == "j1"`, true},
	} {
		src := tc.src
		p, err := CompileWhen(src)
		if err != nil {
			t.Fatal(err)
		}
		whole := &Program{src: p.src, prg: p.prg, data: &need{all: true}, key: "*"}
		in := Input{Type: "job.succeeded", Data: []byte(data)}
		a, errA := p.Match(context.Background(), NewEvent(in))
		b, errB := whole.Match(context.Background(), NewEvent(in))
		if a != tc.want || b != tc.want || errA != nil || errB != nil {
			t.Errorf("%s: pruned %v (%v), whole %v (%v)", src, a, errA, b, errB)
		}
	}
}
