package plainjson

import (
	"encoding/json"
	"testing"
)

func TestMarshal(t *testing.T) {
	v := map[string]any{"text": "a < b && c > d", "n": 1}
	got, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"n":1,"text":"a < b && c > d"}`; string(got) != want {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
	var back map[string]any
	if err := json.Unmarshal(got, &back); err != nil || back["text"] != v["text"] {
		t.Errorf("round trip: %v %v", back, err)
	}
	if _, err := Marshal(func() {}); err == nil {
		t.Error("Marshal of a func succeeded")
	}
}
