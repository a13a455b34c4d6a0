package api

import (
	"encoding/json"
	"reflect"
	"testing"
)

var liveTextSeeds = []string{
	`{"type":"transcript","session_id":"s","created_at":"2026-11-24T10:00:00.000Z","data":{"id":"u1","is_final":true,"utterance":{"start":1.25,"end":2.5,"confidence":0.93,"channel":0,"language":"en","speaker":1,"text":"and that is why","words":[{"word":"and","start":1.25,"end":1.4,"confidence":0.9}]}}}`,
	`{"type":"translation","data":{"utterance_id":"u1","target_language":"fr","utterance":{"text":"hello"},"translated_utterance":{"start":1,"end":1.5,"text":"bonjour","language":"fr"}}}`,
	`{"TYPE":"transcript","Data":{"ID":"u2","Is_Final":false,"Utterance":{"Text":"x","Speaker":null}}}`,
	`{"type":"transcript","data":{"utterance":{"text":"a"},"utterance":{"start":3}}}`,
	`{"type":"transcript","data":{"utterance":{"text":"caf\u00e9","speaker":1.0}}}`,
	`{"type":"transcript","data":{"is_final":"true"}}`,
	`{"type":"transcript","data":null}`,
	`{"type":null,"data":{"utterance":null,"id":null,"is_final":null}}`,
	`{"type":"transcript","data":{"utterance":{"start":1e400}}}`,
	`{"type":"transcript","data":{"utterance":{"speaker":-3,"end":-0}}}`,
	`[]`, `null`, `"x"`, `{}`,
}

// TestDecodeValidLiveText: the scan and encoding/json agree on the seeds, the scan takes the
// usual message, and the unusual ones are encoding/json's (its errors included).
func TestDecodeValidLiveText(t *testing.T) {
	for _, s := range liveTextSeeds {
		checkLiveText(t, []byte(s))
	}
	one := 1
	got, err := DecodeValidLiveText([]byte(liveTextSeeds[0]))
	want := LiveText{Type: MessageTranscript, Data: LiveTextData{ID: "u1", IsFinal: true,
		Utterance: UtteranceText{Start: 1.25, End: 2.5, Text: "and that is why", Language: "en", Speaker: &one}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("DecodeValidLiveText = %+v, %v; want %+v", got, err, want)
	}
	var scanned LiveText
	if !scanLiveText([]byte(liveTextSeeds[0]), &scanned) {
		t.Error("the usual final is not read by the scan")
	}
	if _, err := DecodeValidLiveText([]byte(`{"type":"transcript","data":{"is_final":"true"}}`)); err == nil {
		t.Error("a string is_final decodes without encoding/json's error")
	}
}

// FuzzDecodeValidLiveText checks the scan against encoding/json on valid JSON: where the scan
// reads a message, encoding/json decodes it without error to the same value.
func FuzzDecodeValidLiveText(f *testing.F) {
	for _, s := range liveTextSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if json.Valid(data) {
			checkLiveText(t, data)
		}
	})
}

func checkLiveText(t *testing.T, data []byte) {
	t.Helper()
	var want LiveText
	wantErr := json.Unmarshal(data, &want)
	var scanned LiveText
	if scanLiveText(data, &scanned) && (wantErr != nil || !reflect.DeepEqual(scanned, want)) {
		t.Fatalf("%s: the scan gives %+v, encoding/json %+v, %v", data, scanned, want, wantErr)
	}
	got, err := DecodeValidLiveText(data)
	if (err == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: DecodeValidLiveText = %+v, %v; encoding/json %+v, %v", data, got, err, want, wantErr)
	}
}

// BenchmarkDecodeValidLiveText is the index's read of a live final of 15 words: the scan
// against encoding/json.
func BenchmarkDecodeValidLiveText(b *testing.B) {
	msg := []byte(`{"type":"transcript","session_id":"s","created_at":"2026-11-24T10:00:00.000Z","data":{"id":"u1","is_final":true,"utterance":{"start":1.25,"end":5.5,"confidence":0.93,"channel":0,"language":"en","speaker":1,"text":"and that is why the quarterly numbers look better than we expected this time around","words":[`)
	for i := range 15 {
		if i > 0 {
			msg = append(msg, ',')
		}
		msg = append(msg, `{"word":"quarterly","start":1.25,"end":1.5,"confidence":0.91}`...)
	}
	msg = append(msg, `]}}}`...)
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			if _, err := DecodeValidLiveText(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			var t LiveText
			if err := json.Unmarshal(msg, &t); err != nil {
				b.Fatal(err)
			}
		}
	})
}
