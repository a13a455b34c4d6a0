package api

import (
	"bytes"
	"encoding/json"
	"testing"
)

var headSeeds = []string{
	`{"id":"x","event":"live.transcript","payload":{"type":"transcript"},"error":null}`,
	`{"ID":"a","Id":null,"EVENT":"e","event":null,"Payload":[1],"payload":{ },"error":{"code":1}}`,
	`{"id":"\u00e9\\"","event":"a\nb"}`, `{"id":5}`, `{"event":true}`, `{"id":"x"`, `[]`, `null`, `{}`, ` {"id" : "x" } `,
	`{"ſd":"x"}`, `{"i\u0064":"x"}`, `{"id":"x","id":"y"}`,
}

// checkCallbackHead compares the one-scan reading of an envelope with its decoding.
func checkCallbackHead(t *testing.T, body []byte) {
	t.Helper()
	got, ok := scanCallbackHead(body)
	if !ok {
		return
	}
	var want callbackSpans
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatalf("%q scanned, but does not decode: %v", body, err)
	}
	if (got.ID == nil) != (want.ID == nil) || (got.ID != nil && *got.ID != *want.ID) || got.Event != want.Event ||
		!bytes.Equal(got.Payload, want.Payload) || !bytes.Equal(got.Error, want.Error) {
		t.Fatalf("%q: scanned %+v, decoded %+v", body, got, want)
	}
}

func TestCallbackHeadMatchesDecoding(t *testing.T) {
	for _, s := range headSeeds {
		checkCallbackHead(t, []byte(s))
	}
}

func FuzzCallbackHead(f *testing.F) {
	for _, s := range headSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkCallbackHead)
}
