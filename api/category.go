package api

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
func (c MessageCategory) Valid() bool {
	for _, k := range Categories {
		if k == c {
			return true
		}
	}
	return false
}

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

// DefaultMessagesConfig is what the WebSocket sends when a flag is absent (provider-facts.md).
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

// defaultCallback is what the callback receives when a flag is absent (provider-facts.md).
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
	if m == nil {
		return [9]*bool{}
	}
	return [9]*bool{
		m.ReceivePartialTranscripts,
		m.ReceiveFinalTranscripts,
		m.ReceiveSpeechEvents,
		m.ReceivePreProcessingEvents,
		m.ReceiveRealtimeProcessingEvents,
		m.ReceivePostProcessingEvents,
		m.ReceiveAcknowledgments,
		m.ReceiveErrors,
		m.ReceiveLifecycleEvents,
	}
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
func Category(m *LiveMessage) (c MessageCategory, ok bool) {
	cats := MessageCategories(m)
	if len(cats) == 0 {
		return "", false
	}
	return cats[0], true
}

// MessageCategories lists every category a message belongs to, the one Category returns first.
// A failed add-on message is in errors and also in its own category, so a session that switches
// on either receives it.
func MessageCategories(m *LiveMessage) []MessageCategory {
	own, known := typeCategory(m)
	failed := m.Type == MessageError || m.HasError() || (m.Acknowledged != nil && !*m.Acknowledged)
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

func typeCategory(m *LiveMessage) (MessageCategory, bool) {
	switch m.Type {
	case MessageTranscript:
		if m.TranscriptIsFinal() {
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
