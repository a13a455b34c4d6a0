package api

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestMessageCategories(t *testing.T) {
	const head = `"session_id":"s","created_at":"2024-03-01T10:00:00.000Z",`
	cases := []struct {
		name string
		msg  string
		want []MessageCategory
	}{
		{"partial transcript", `{` + head + `"type":"transcript","data":{"id":"u","is_final":false,"utterance":{}}}`,
			[]MessageCategory{CategoryPartialTranscripts}},
		{"transcript without is_final is partial", `{` + head + `"type":"transcript","data":{"id":"u"}}`,
			[]MessageCategory{CategoryPartialTranscripts}},
		{"final transcript", `{` + head + `"type":"transcript","data":{"id":"u","is_final":true,"utterance":{}}}`,
			[]MessageCategory{CategoryFinalTranscripts}},
		{"speech_start", `{` + head + `"type":"speech_start","data":{"time":1,"channel":0}}`, []MessageCategory{CategorySpeechEvents}},
		{"speech_end", `{` + head + `"type":"speech_end","data":{"time":2,"channel":0}}`, []MessageCategory{CategorySpeechEvents}},
		{"translation", `{` + head + `"type":"translation","error":null,"data":{}}`, []MessageCategory{CategoryRealtimeProcessingEvents}},
		{"named_entity_recognition", `{` + head + `"type":"named_entity_recognition","error":null,"data":{}}`, []MessageCategory{CategoryRealtimeProcessingEvents}},
		{"sentiment_analysis", `{` + head + `"type":"sentiment_analysis","data":{}}`, []MessageCategory{CategoryRealtimeProcessingEvents}},
		{"post_transcript", `{` + head + `"type":"post_transcript","error":null,"data":{}}`, []MessageCategory{CategoryPostProcessingEvents}},
		{"post_final_transcript", `{` + head + `"type":"post_final_transcript","data":{}}`, []MessageCategory{CategoryPostProcessingEvents}},
		{"post_chapterization", `{` + head + `"type":"post_chapterization","data":{"results":[]}}`, []MessageCategory{CategoryPostProcessingEvents}},
		{"post_summarization", `{` + head + `"type":"post_summarization","data":{"results":""}}`, []MessageCategory{CategoryPostProcessingEvents}},
		{"audio_chunk ack", `{` + head + `"type":"audio_chunk","acknowledged":true,"error":null,"data":{"byte_range":[0,1],"time_range":[0,0.1]}}`,
			[]MessageCategory{CategoryAcknowledgments}},
		{"stop_recording ack", `{` + head + `"type":"stop_recording","acknowledged":true,"data":{}}`, []MessageCategory{CategoryAcknowledgments}},
		{"start_session", `{` + head + `"type":"start_session"}`, []MessageCategory{CategoryLifecycleEvents}},
		{"start_recording", `{` + head + `"type":"start_recording"}`, []MessageCategory{CategoryLifecycleEvents}},
		{"end_recording", `{` + head + `"type":"end_recording","data":{"recording_duration":3}}`, []MessageCategory{CategoryLifecycleEvents}},
		{"end_session", `{` + head + `"type":"end_session"}`, []MessageCategory{CategoryLifecycleEvents}},

		{"failed translation", `{` + head + `"type":"translation","error":{"message":"model down"},"data":null}`,
			[]MessageCategory{CategoryErrors, CategoryRealtimeProcessingEvents}},
		{"failed post_summarization", `{` + head + `"type":"post_summarization","error":{"message":"x"}}`,
			[]MessageCategory{CategoryErrors, CategoryPostProcessingEvents}},
		{"refused audio chunk", `{` + head + `"type":"audio_chunk","acknowledged":false,"error":{"message":"bad frame"}}`,
			[]MessageCategory{CategoryErrors, CategoryAcknowledgments}},
		{"refused ack without error", `{` + head + `"type":"stop_recording","acknowledged":false,"error":null}`,
			[]MessageCategory{CategoryErrors, CategoryAcknowledgments}},
		{"top-level error", `{` + head + `"type":"error","error":{"message":"session expired"}}`, []MessageCategory{CategoryErrors}},
		{"top-level error without body", `{"type":"error"}`, []MessageCategory{CategoryErrors}},
		{"unknown type", `{` + head + `"type":"speaker_change","data":{}}`, nil},
		{"missing type", `{` + head + `"data":{}}`, nil},
		// An unknown type that says it failed is still an error worth delivering.
		{"unknown type with error", `{` + head + `"type":"speaker_change","error":{"message":"x"}}`, []MessageCategory{CategoryErrors}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := decodeJSON[LiveMessage](t, tc.msg)
			got := MessageCategories(&m)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("MessageCategories = %q, want %q", got, tc.want)
			}
			c, ok := Category(&m)
			if len(tc.want) == 0 {
				if ok || c != "" {
					t.Errorf("Category = %q, %v; want not ok", c, ok)
				}
				return
			}
			if !ok || c != tc.want[0] {
				t.Errorf("Category = %q, %v; want %q", c, ok, tc.want[0])
			}
		})
	}
}

func TestEveryDocumentedTypeHasACategory(t *testing.T) {
	if len(MessageTypes) != 16 {
		t.Fatalf("%d message types, want 16", len(MessageTypes))
	}
	seen := map[MessageCategory]bool{}
	for _, typ := range MessageTypes {
		if !typ.Known() {
			t.Errorf("%s not Known", typ)
		}
		c, ok := Category(&LiveMessage{Type: typ})
		if !ok || !c.Valid() {
			t.Errorf("%s: category %q %v", typ, c, ok)
		}
		seen[c] = true
	}
	// Every category but errors (a rule, not a type), pre-processing (no documented message) and
	// final transcripts (data.is_final, tested above) is reached by a bare message of some type.
	for _, c := range Categories {
		if want := c != CategoryErrors && c != CategoryPreProcessingEvents && c != CategoryFinalTranscripts; seen[c] != want {
			t.Errorf("category %s reached: %v", c, seen[c])
		}
	}
	if MessageType("error").Known() != true || MessageType("nope").Known() {
		t.Error("Known")
	}
}

func TestErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		msg, want string
		has       bool
	}{
		{`{"type":"translation","error":{"message":"model down"}}`, "model down", true},
		{`{"type":"translation","error":"plain text"}`, "plain text", true},
		{`{"type":"translation","error":null}`, "", false},
		{`{"type":"translation"}`, "", false},
		{`{"type":"translation","error":{"code":3}}`, `{"code":3}`, true},
	} {
		m := decodeJSON[LiveMessage](t, tc.msg)
		if m.HasError() != tc.has || m.ErrorMessage() != tc.want {
			t.Errorf("%s: HasError %v ErrorMessage %q", tc.msg, m.HasError(), m.ErrorMessage())
		}
	}
}

// The defaults of the nine flags, as in the table of provider-facts.md.
var flagTable = []struct {
	cat       MessageCategory
	flag      string
	websocket bool
	callback  bool
}{
	{CategoryPartialTranscripts, "receive_partial_transcripts", false, false},
	{CategoryFinalTranscripts, "receive_final_transcripts", true, true},
	{CategorySpeechEvents, "receive_speech_events", true, false},
	{CategoryPreProcessingEvents, "receive_pre_processing_events", true, true},
	{CategoryRealtimeProcessingEvents, "receive_realtime_processing_events", true, true},
	{CategoryPostProcessingEvents, "receive_post_processing_events", true, true},
	{CategoryAcknowledgments, "receive_acknowledgments", true, false},
	{CategoryErrors, "receive_errors", true, false},
	{CategoryLifecycleEvents, "receive_lifecycle_events", false, true},
}

func TestFlagDefaults(t *testing.T) {
	var mc *MessagesConfig
	var cc *LiveCallbackConfig
	ws, cb := mc.WebSocketCategories(), cc.CallbackCategories()
	wsEmpty := (&MessagesConfig{}).WebSocketCategories()
	cbEmpty := (&LiveCallbackConfig{URL: "https://h.example.com/"}).CallbackCategories()
	if len(ws) != 9 || len(cb) != 9 {
		t.Fatalf("resolved sets have %d and %d flags", len(ws), len(cb))
	}
	for i, row := range flagTable {
		if Categories[i] != row.cat || row.cat.Flag() != row.flag {
			t.Errorf("row %d: category %q flag %q", i, Categories[i], row.cat.Flag())
		}
		if ws[row.cat] != row.websocket || wsEmpty[row.cat] != row.websocket {
			t.Errorf("messages_config default of %s = %v, want %v", row.flag, ws[row.cat], row.websocket)
		}
		if cb[row.cat] != row.callback || cbEmpty[row.cat] != row.callback {
			t.Errorf("callback_config default of %s = %v, want %v", row.flag, cb[row.cat], row.callback)
		}
	}
}

func TestFlagsOverrideDefaults(t *testing.T) {
	// Each flag, set to the opposite of its default in JSON, wins over the default; the other
	// eight keep theirs.
	for _, row := range flagTable {
		var lr LiveRequest
		body := `{"messages_config":{"` + row.flag + `":` + strconv.FormatBool(!row.websocket) + `},` +
			`"callback_config":{"url":"https://h.example.com/","` + row.flag + `":` + strconv.FormatBool(!row.callback) + `}}`
		if err := json.Unmarshal([]byte(body), &lr); err != nil {
			t.Fatal(err)
		}
		ws := lr.MessagesConfig.WebSocketCategories()
		cb := lr.CallbackConfig.CallbackCategories()
		for _, other := range flagTable {
			wantWS, wantCB := other.websocket, other.callback
			if other.cat == row.cat {
				wantWS, wantCB = !wantWS, !wantCB
			}
			if ws[other.cat] != wantWS || cb[other.cat] != wantCB {
				t.Errorf("%s set: %s websocket %v callback %v", row.flag, other.flag, ws[other.cat], cb[other.cat])
			}
		}
		if lr.CallbackConfig.URL != "https://h.example.com/" {
			t.Errorf("callback url lost: %+v", lr.CallbackConfig)
		}
	}
	set := CategorySet{CategoryErrors: true}
	if !set.Has(CategoryFinalTranscripts, CategoryErrors) || set.Has(CategoryFinalTranscripts) || set.Has() {
		t.Error("CategorySet.Has")
	}
}

func TestCategoryValid(t *testing.T) {
	for _, c := range Categories {
		if !c.Valid() {
			t.Errorf("%s not valid", c)
		}
	}
	if MessageCategory("everything").Valid() {
		t.Error("unknown category valid")
	}
}

// Set reaches the member its category's flag names, and only that one; EveryMessage sets all
// nine explicitly, so false is written out rather than left to the defaults.
func TestMessagesConfigSet(t *testing.T) {
	for _, c := range Categories {
		var m MessagesConfig
		if err := m.Set(c, Bool(true)); err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"` + c.Flag() + `":true}`; string(got) != want {
			t.Errorf("Set(%s): %s, want %s", c, got, want)
		}
		if err := m.Set(c, nil); err != nil || m != (MessagesConfig{}) {
			t.Errorf("Set(%s, nil) left %+v (%v)", c, m, err)
		}
	}
	var m MessagesConfig
	if err := m.Set("partial", Bool(true)); err == nil || err.Error() != `unknown message category "partial"` {
		t.Errorf("Set of an unknown category: %v", err)
	}
	for _, on := range []bool{true, false} {
		all := EveryMessage(on)
		set := all.WebSocketCategories()
		for _, c := range Categories {
			if set[c] != on {
				t.Errorf("EveryMessage(%v): %s is %v", on, c, set[c])
			}
		}
		got, _ := json.Marshal(all)
		if n := strings.Count(string(got), strconv.FormatBool(on)); n != 9 {
			t.Errorf("EveryMessage(%v) writes %d flags: %s", on, n, got)
		}
	}
}
