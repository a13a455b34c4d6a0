package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// The key scan folds ASCII names by upper-casing them; foldName must agree.
func TestFoldNameASCII(t *testing.T) {
	for c := 0; c < 0x80; c++ {
		want := strings.ToUpper(string(rune(c)))
		if got := foldName(string(rune(c))); got != want {
			t.Errorf("foldName(%q) = %q, want %q", rune(c), got, want)
		}
	}
}

// referenceHasUnknown is how decodeKeeping found unknown members before the key scan: decode
// the object into a map and look each name up.
func referenceHasUnknown(t *testing.T, obj []byte, known map[string]struct{}) bool {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(obj, &all); err != nil {
		t.Fatalf("valid object does not decode into a map: %v", err)
	}
	for k := range all {
		if !isKnown(known, k) {
			return true
		}
	}
	return false
}

// keepingTypes are the alias types decodeKeeping is called with, for their known names.
var keepingTypes = []reflect.Type{
	reflect.TypeFor[LiveMessage](), reflect.TypeFor[Job](), reflect.TypeFor[File](),
	reflect.TypeFor[PreRecordedRequest](), reflect.TypeFor[LiveRequest](),
}

var scanSeeds = []string{
	`{}`, ` { } `, `{"word":" a","start":1,"end":2,"confidence":0.9}`,
	`{"word":"a","start":1,"start":2}`, `{"Word":"a"}`, `{"WORD":"a","word":"b"}`, `{"wor\u0064":"a"}`,
	`{"w\u00f6rd":"a"}`, `{"\u017ftart":1}`, `{"start":-0}`, `{"start":1e400}`, `{"start":1E+2,"end":-0.5e-3}`,
	`{"start":01}`, `{"start":1.}`, `{"start":.5}`, `{"start":"1"}`, `{"start":null}`, `{"word":null}`,
	`{"word":"caf` + "\xe9" + `"}`, `{"word":"tab` + "\t" + `"}`, `{"word":"q\"q"}`, `{"word":"\\"}`,
	`{"word":"a",}`, `{"word":"a"} x`, `{"word":"a"}}`, `{"word" "a"}`, `[{"word":"a"}]`, `null`, `"x"`,
	`{"confidence":0.5,"extra":{"nested":["}",{"\"":"{"}]},"word":"x"}`,
	`{"id":"a","id":"b","type":"transcript","Type":"x","t\u0079pe":"y"}`,
	`{"is_final":true,"IS_FINAL":false}`, `{"is_final":true,"is_final":null}`, `{"i\u017f_final":true}`,
	`{"speaker":1,"speaker":null,"words":[{"word":"a"}],"words":[]}`,
	"{\n\t\"word\" :\r \" a\" ,\"start\":\t1 }\n",
}

// FuzzDecodeKeeping checks the scans that spare decodeKeeping and classification a decoding
// against the decodings they replace: the unknown-member scan against a map, lastMember
// against a map, and isFinalMember against a struct.
func FuzzDecodeKeeping(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	SeedTestdata(f, "*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		if json.Valid(data) {
			trimmed := bytes.TrimSpace(data)
			if len(trimmed) > 0 && trimmed[0] == '{' {
				for _, typ := range keepingTypes {
					known := fieldNames(typ)
					if got, want := hasUnknownMember(trimmed, known), referenceHasUnknown(t, trimmed, known); got != want {
						t.Fatalf("%v: hasUnknownMember %v, the map says %v", typ, got, want)
					}
				}
				var all map[string]json.RawMessage
				if err := json.Unmarshal(trimmed, &all); err != nil {
					t.Fatal(err)
				}
				for _, name := range []string{"id", "type", "payload", ""} {
					v, ok, bad := lastMember(trimmed, name)
					want, wantOK := all[name]
					if bad || ok != wantOK || !bytes.Equal(v, want) {
						t.Fatalf("lastMember %q: %q %v %v; the map has %q %v", name, v, ok, bad, want, wantOK)
					}
				}
			}
			var d struct {
				IsFinal bool `json:"is_final"`
			}
			_ = json.Unmarshal(trimmed, &d)
			if got := isFinalMember(trimmed); got != d.IsFinal {
				t.Fatalf("isFinalMember %v, decoding gives %v", got, d.IsFinal)
			}
		}
	})
}
