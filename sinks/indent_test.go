package sinks

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/scribehook/scribehook/api"
)

// writeIndented gives json.Encoder's indented bytes for the compact encoding of any value.
func FuzzWriteIndented(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a":[]}`, `{"a":{},"b":[1,2,{"c":"x\"y\\","d":null}],"e":true}`, `"s"`, `12.5e3`,
		`{"t":"a < b & c > d","u":"\u2028 \\\" , : { } [ ]"}`, `[[[]],[{}],{"":""}]`,
		succeededData, subtitlesData(SubtitleFile{Name: "a.srt", Content: "1\n00:00:01,000 --> 00:00:02,000\nHi, \"you\"\n"}),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		want := encoderIndented(t, v)
		var compact bytes.Buffer
		if err := json.Compact(&compact, want); err != nil {
			t.Fatal(err)
		}
		checkIndented(t, compact.Bytes(), want)
	})
}

// The event files are what indentedEvent wrote before: json.Encoder's indented envelope.
func TestEventFileMatchesEncoder(t *testing.T) {
	live := fileEvent("live.transcript", "ev/live 1", `{"type":"transcript","data":{"utterance":{"text":"a <b> & c"}}}`)
	live.Kind, live.Category, live.CustomMetadata = api.KindLive, api.CategoryFinalTranscripts, json.RawMessage(`{"team":"a","n":[]}`)
	for _, ev := range []api.Event{live, fileEvent(api.EventJobSucceeded, "ev-done", succeededData), fileEvent(api.EventJobCreated, "e", `{}`)} {
		compact, err := eventJSON(ev)
		if err != nil {
			t.Fatal(err)
		}
		checkIndented(t, compact, encoderIndented(t, ev))
	}
}

// encoderIndented is v as json.Encoder writes it indented by two spaces, HTML unescaped.
func encoderIndented(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func checkIndented(t *testing.T, compact, want []byte) {
	t.Helper()
	var got bytes.Buffer
	if err := writeIndented(&got, compact); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("writeIndented(%s) =\n%s\nwant\n%s", compact, got.Bytes(), want)
	}
}
