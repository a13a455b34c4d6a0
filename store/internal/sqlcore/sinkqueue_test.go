package sqlcore

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
)

// TestSameEventCoversEveryField: the encoding cache of enqueue must see a
// change in any field of api.Event; a field added later without sameEvent knowing fails here.
func TestSameEventCoversEveryField(t *testing.T) {
	base := api.Event{ID: "a", Type: "t", CreatedAt: api.NewTime(time.Unix(1, 0)), JobID: "j", Kind: api.KindLive,
		Category: api.CategoryFinalTranscripts, CustomMetadata: json.RawMessage(`{"a":1}`), Data: json.RawMessage(`{}`)}
	if !sameEvent(&base, &base) {
		t.Fatal("an event differs from itself")
	}
	v := reflect.ValueOf(base)
	for i := range v.NumField() {
		changed := base
		f := reflect.ValueOf(&changed).Elem().Field(i)
		switch f.Interface().(type) {
		case string, api.JobKind, api.MessageCategory:
			f.SetString(f.String() + "x")
		case json.RawMessage:
			f.SetBytes([]byte(`{"b":2}`))
		case api.Time:
			changed.CreatedAt = api.NewTime(time.Unix(2, 0))
		default:
			t.Fatalf("api.Event.%s has type %s: teach sameEvent and this test about it",
				v.Type().Field(i).Name, f.Type())
		}
		if sameEvent(&base, &changed) {
			t.Errorf("sameEvent misses a change of %s", v.Type().Field(i).Name)
		}
	}
	noData, emptyData := base, base
	noData.Data, emptyData.Data = nil, json.RawMessage{}
	if sameEvent(&emptyData, &noData) || sameEvent(&noData, &emptyData) {
		t.Error("sameEvent confuses nil data (null) with empty data")
	}
}

func TestCeilMicro(t *testing.T) {
	base := time.Date(2024, 3, 1, 0, 0, 0, 1000, time.UTC)
	if got := ceilMicro(base); !got.Equal(base) {
		t.Errorf("ceilMicro(%v) = %v", base, got)
	}
	if got := ceilMicro(base.Add(1)); !got.Equal(base.Add(time.Microsecond)) {
		t.Errorf("ceilMicro(+1ns) = %v", got)
	}
}
