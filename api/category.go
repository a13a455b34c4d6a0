package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// MessageCategory is one of the nine categories a live message belongs to; each is switched by
// a flag in messages_config and callback_config.
type MessageCategory string

const (
	CategoryPartialTranscripts       MessageCategory = "partial_transcripts"
	CategoryFinalTranscripts         MessageCategory = "final_transcripts"
	CategorySpeechEvents             MessageCategory = "speech_events"
	CategoryPreProcessingEvents      MessageCategory = "pre_processing_events"
	CategoryRealtimeProcessingEvents MessageCategory = "realtime_processing_events"
	CategoryPostProcessingEvents     MessageCategory = "post_processing_events"
	CategoryAcknowledgments          MessageCategory = "acknowledgments"
	CategoryErrors                   MessageCategory = "errors"
	CategoryLifecycleEvents          MessageCategory = "lifecycle_events"
)

// Categories lists the nine categories in the order of the interface.
var Categories = [...]MessageCategory{
	CategoryPartialTranscripts,
	CategoryFinalTranscripts,
	CategorySpeechEvents,
	CategoryPreProcessingEvents,
	CategoryRealtimeProcessingEvents,
	CategoryPostProcessingEvents,
	CategoryAcknowledgments,
	CategoryErrors,
	CategoryLifecycleEvents,
}

// Valid reports whether c is one of the nine.
func (c MessageCategory) Valid() bool { return slices.Contains(Categories[:], c) }

// Flag is the name of the boolean that switches the category, e.g. receive_final_transcripts.
func (c MessageCategory) Flag() string { return "receive_" + string(c) }

// CategorySet is a resolved set of the nine flags (absent flags already replaced by defaults).
type CategorySet map[MessageCategory]bool

// Has reports whether the set switches on any of cats.
func (s CategorySet) Has(cats ...MessageCategory) bool {
	for _, c := range cats {
		if s[c] {
			return true
		}
	}
	return false
}

// defaultWebSocket is what the WebSocket sends when a flag is absent (docs/spec/provider-facts.md).
var defaultWebSocket = CategorySet{
	CategoryPartialTranscripts:       false,
	CategoryFinalTranscripts:         true,
	CategorySpeechEvents:             true,
	CategoryPreProcessingEvents:      true,
	CategoryRealtimeProcessingEvents: true,
	CategoryPostProcessingEvents:     true,
	CategoryAcknowledgments:          true,
	CategoryErrors:                   true,
	CategoryLifecycleEvents:          false,
}

// defaultCallback is what the callback receives when a flag is absent (docs/spec/provider-facts.md).
var defaultCallback = CategorySet{
	CategoryPartialTranscripts:       false,
	CategoryFinalTranscripts:         true,
	CategorySpeechEvents:             false,
	CategoryPreProcessingEvents:      true,
	CategoryRealtimeProcessingEvents: true,
	CategoryPostProcessingEvents:     true,
	CategoryAcknowledgments:          false,
	CategoryErrors:                   false,
	CategoryLifecycleEvents:          true,
}

func (m *MessagesConfig) flags() [9]*bool {
	var out [9]*bool
	if m != nil {
		for i, f := range m.fields() {
			out[i] = *f
		}
	}
	return out
}

// fields are the nine flags in the order of Categories: the one place that pairs a category
// with its member.
func (m *MessagesConfig) fields() [9]**bool {
	return [9]**bool{
		&m.ReceivePartialTranscripts,
		&m.ReceiveFinalTranscripts,
		&m.ReceiveSpeechEvents,
		&m.ReceivePreProcessingEvents,
		&m.ReceiveRealtimeProcessingEvents,
		&m.ReceivePostProcessingEvents,
		&m.ReceiveAcknowledgments,
		&m.ReceiveErrors,
		&m.ReceiveLifecycleEvents,
	}
}

// Set sets the flag of category c: on, off, or nil (the default applies). An unknown
// category is an error.
func (m *MessagesConfig) Set(c MessageCategory, v *bool) error {
	i := slices.Index(Categories[:], c)
	if i < 0 {
		return fmt.Errorf("unknown message category %q", c)
	}
	*m.fields()[i] = v
	return nil
}

// EveryMessage is a messages config with each of the nine categories set explicitly to on:
// a session whose callbacks (or WebSocket) carry every message, or none.
func EveryMessage(on bool) MessagesConfig {
	var m MessagesConfig
	for _, f := range m.fields() {
		*f = Bool(on)
	}
	return m
}

func resolve(m *MessagesConfig, defaults CategorySet) CategorySet {
	out := make(CategorySet, len(Categories))
	for i, f := range m.flags() {
		c := Categories[i]
		if f != nil {
			out[c] = *f
		} else {
			out[c] = defaults[c]
		}
	}
	return out
}

// WebSocketCategories resolves messages_config against the WebSocket defaults.
func (m *MessagesConfig) WebSocketCategories() CategorySet { return resolve(m, defaultWebSocket) }

// CallbackCategories resolves the flags of a live callback_config against the callback
// defaults. A nil config gives the defaults.
func (c *LiveCallbackConfig) CallbackCategories() CategorySet {
	if c == nil {
		return resolve(nil, defaultCallback)
	}
	return resolve(&c.MessagesConfig, defaultCallback)
}

// Category maps a live message to its category, exactly as the table of provider-facts.md
// says. The errors rule comes first: a message whose error is non-null, an acknowledgment with
// acknowledged false, and a top-level "error" message are in errors. ok is false for a type
// this model does not know.
func Category(m *LiveMessage) (c MessageCategory, ok bool) { return m.Head().Category() }

// MessageCategories lists every category a message belongs to, the one Category returns first.
// A failed add-on message is in errors and also in its own category, so a session that switches
// on either receives it.
func MessageCategories(m *LiveMessage) []MessageCategory { return m.Head().Categories() }

// LiveMessageHead is what the categories of a live message depend on: its type, whether it
// failed, and data.is_final.
type LiveMessageHead struct {
	Type MessageType
	// CreatedAt is the message's created_at (zero when absent or null): the pipeline's
	// after-final rules read it, so the receiver's scan keeps it for them.
	CreatedAt    time.Time
	Acknowledged *bool
	HasError     bool // a non-null error
	IsFinal      bool // data.is_final (false when data is not an object)
}

// Head returns what m's categories depend on.
func (m *LiveMessage) Head() LiveMessageHead {
	return LiveMessageHead{Type: m.Type, CreatedAt: m.CreatedAt.Time, Acknowledged: m.Acknowledged, HasError: m.HasError(), IsFinal: m.TranscriptIsFinal()}
}

// Category is the first of Categories; ok is false for a type this model does not know.
func (h LiveMessageHead) Category() (c MessageCategory, ok bool) {
	cats := h.Categories()
	if len(cats) == 0 {
		return "", false
	}
	return cats[0], true
}

// Categories is MessageCategories of the message h is the head of.
func (h LiveMessageHead) Categories() []MessageCategory {
	own, known := h.typeCategory()
	failed := h.Type == MessageError || h.HasError || (h.Acknowledged != nil && !*h.Acknowledged)
	switch {
	case failed && known && own != CategoryErrors:
		return []MessageCategory{CategoryErrors, own}
	case failed:
		return []MessageCategory{CategoryErrors}
	case known:
		return []MessageCategory{own}
	}
	return nil
}

func (h LiveMessageHead) typeCategory() (MessageCategory, bool) {
	switch h.Type {
	case MessageTranscript:
		if h.IsFinal {
			return CategoryFinalTranscripts, true
		}
		return CategoryPartialTranscripts, true
	case MessageSpeechStart, MessageSpeechEnd:
		return CategorySpeechEvents, true
	case MessageTranslation, MessageNamedEntityRecognition, MessageSentimentAnalysis:
		return CategoryRealtimeProcessingEvents, true
	case MessagePostTranscript, MessagePostFinalTranscript, MessagePostChapterization, MessagePostSummarization:
		return CategoryPostProcessingEvents, true
	case MessageAudioChunk, MessageStopRecording:
		return CategoryAcknowledgments, true
	case MessageStartSession, MessageStartRecording, MessageEndRecording, MessageEndSession:
		return CategoryLifecycleEvents, true
	case MessageError:
		return CategoryErrors, true
	}
	return "", false
}

// DecodeLiveMessageHead decodes what the categories of the live message payload depend on,
// without keeping its data or unknown members: one decode, in which data is only scanned for
// is_final. It gives what decoding payload as a LiveMessage and taking its Head gives, and
// fails exactly when that decoding fails, with its error.
func DecodeLiveMessageHead(payload []byte) (LiveMessageHead, error) {
	// The members of LiveMessage that can fail to decode, with the same names and types, so
	// that this decoding fails on the same inputs; error and data are read without copies.
	var p struct {
		SessionID    string      `json:"session_id"`
		CreatedAt    timeProbe   `json:"created_at"`
		Type         MessageType `json:"type"`
		Acknowledged *bool       `json:"acknowledged,omitempty"`
		Error        errorProbe  `json:"error,omitempty"`
		Data         finalProbe  `json:"data,omitempty"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		// The error to report is LiveMessage's own.
		var m LiveMessage
		if err := json.Unmarshal(payload, &m); err != nil {
			return LiveMessageHead{}, err
		}
		return m.Head(), nil
	}
	return LiveMessageHead{Type: p.Type, CreatedAt: p.CreatedAt.t, Acknowledged: p.Acknowledged, HasError: bool(p.Error), IsFinal: bool(p.Data)}, nil
}

// timeProbe decodes like Time, succeeding and failing on the same values, into t.
type timeProbe struct{ t time.Time }

func (p *timeProbe) UnmarshalJSON(b []byte) error {
	if s, ok := plainStringValue(b); ok {
		// A plain string decodes to its own bytes: parse them as Time would.
		t, err := ParseTime(string(s))
		if err == nil {
			p.t = t
		}
		return err
	}
	var t Time
	if err := t.UnmarshalJSON(b); err != nil {
		return err
	}
	p.t = t.Time // zero for null, as LiveMessage's own decoding leaves it
	return nil
}

// errorProbe is LiveMessage.HasError of the member's last value.
type errorProbe bool

func (p *errorProbe) UnmarshalJSON(b []byte) error {
	m := LiveMessage{Error: b}
	*p = errorProbe(m.HasError())
	return nil
}

// finalProbe is LiveMessage.TranscriptIsFinal of the member's last value.
type finalProbe bool

func (p *finalProbe) UnmarshalJSON(b []byte) error {
	*p = finalProbe(isFinalMember(b))
	return nil
}

// isFinalMember is what decoding data (valid JSON) into struct{ IsFinal bool
// `json:"is_final"` } gives, ignoring errors as TranscriptIsFinal does: the last member named
// is_final in any case whose value is true or false; a value of another type, or null, leaves
// the previous one, and data that is not an object gives false.
func isFinalMember(data []byte) bool {
	if len(data) == 0 || data[0] != '{' {
		return false
	}
	final := false
	m := objectMembers(data)
	for k, v := range m.all {
		var named bool
		if plainKey(k) {
			named = bytes.EqualFold(k, []byte("is_final"))
		} else if name, ok := keyName(k); ok {
			named = strings.EqualFold(name, "is_final")
		} else {
			m.bad = true
			break
		}
		if named {
			switch string(v) {
			case "true":
				final = true
			case "false":
				final = false
			}
		}
	}
	if m.bad {
		return (&LiveMessage{Data: data}).TranscriptIsFinal()
	}
	return final
}
