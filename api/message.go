package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// MessageType is the type of a live message.
type MessageType string

// The sixteen live message types of provider-facts.md, plus the top-level error message that
// some clients see.
const (
	MessageTranscript             MessageType = "transcript"
	MessageSpeechStart            MessageType = "speech_start"
	MessageSpeechEnd              MessageType = "speech_end"
	MessageTranslation            MessageType = "translation"
	MessageNamedEntityRecognition MessageType = "named_entity_recognition"
	MessageSentimentAnalysis      MessageType = "sentiment_analysis"
	MessagePostTranscript         MessageType = "post_transcript"
	MessagePostFinalTranscript    MessageType = "post_final_transcript"
	MessagePostChapterization     MessageType = "post_chapterization"
	MessagePostSummarization      MessageType = "post_summarization"
	MessageAudioChunk             MessageType = "audio_chunk"
	MessageStopRecording          MessageType = "stop_recording"
	MessageStartSession           MessageType = "start_session"
	MessageStartRecording         MessageType = "start_recording"
	MessageEndRecording           MessageType = "end_recording"
	MessageEndSession             MessageType = "end_session"

	MessageError MessageType = "error"
)

// MessageTypes lists the sixteen documented types.
var MessageTypes = [...]MessageType{
	MessageTranscript, MessageSpeechStart, MessageSpeechEnd, MessageTranslation,
	MessageNamedEntityRecognition, MessageSentimentAnalysis, MessagePostTranscript,
	MessagePostFinalTranscript, MessagePostChapterization, MessagePostSummarization,
	MessageAudioChunk, MessageStopRecording, MessageStartSession, MessageStartRecording,
	MessageEndRecording, MessageEndSession,
}

// Known reports whether t is one of the sixteen types or the top-level error.
func (t MessageType) Known() bool { return t == MessageError || slices.Contains(MessageTypes[:], t) }

// LiveMessage is one message of a live session, as sent over the WebSocket and wrapped in live
// callbacks. Data stays raw so that the message round-trips byte for byte in its known members;
// the typed accessors below decode it.
type LiveMessage struct {
	SessionID    string          `json:"session_id"`
	CreatedAt    Time            `json:"created_at"`
	Type         MessageType     `json:"type"`
	Acknowledged *bool           `json:"acknowledged,omitempty"`
	Error        json.RawMessage `json:"error,omitempty"` // absent, null, or {message}
	Data         json.RawMessage `json:"data,omitempty"`
	Extra        Extra           `json:"-"`
}

func (m *LiveMessage) UnmarshalJSON(b []byte) error {
	type plain LiveMessage
	return decodeKeeping(b, (*plain)(m), &m.Extra)
}

func (m LiveMessage) MarshalJSON() ([]byte, error) {
	type plain LiveMessage
	return encodeKeeping(plain(m), m.Extra)
}

// HasError reports whether the message carries a non-null error.
func (m *LiveMessage) HasError() bool {
	e := bytes.TrimSpace(m.Error)
	return len(e) > 0 && !bytes.Equal(e, []byte("null"))
}

// ErrorMessage returns the message of a non-null error ({message} or a plain string).
func (m *LiveMessage) ErrorMessage() string {
	if !m.HasError() {
		return ""
	}
	var e MessageErrorBody
	if json.Unmarshal(m.Error, &e) == nil && e.Message != "" {
		return e.Message
	}
	var s string
	if json.Unmarshal(m.Error, &s) == nil {
		return s
	}
	return string(m.Error)
}

// TranscriptIsFinal reads data.is_final of a transcript message without decoding the rest.
func (m *LiveMessage) TranscriptIsFinal() bool {
	var d struct {
		IsFinal bool `json:"is_final"`
	}
	_ = json.Unmarshal(m.Data, &d)
	return d.IsFinal
}

// DecodeData decodes data into v, naming the message type on failure.
func (m *LiveMessage) DecodeData(v any) error {
	if len(m.Data) == 0 {
		return fmt.Errorf("%s message has no data", m.Type)
	}
	if err := json.Unmarshal(m.Data, v); err != nil {
		return fmt.Errorf("decode %s data: %w", m.Type, err)
	}
	return nil
}

// SetData encodes v as the message's data.
func (m *LiveMessage) SetData(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s data: %w", m.Type, err)
	}
	m.Data = b
	return nil
}

// MessageErrorBody is the error of an add-on message or a failed acknowledgment.
type MessageErrorBody struct {
	Message string `json:"message"`
	Extra   Extra  `json:"-"`
}

func (e *MessageErrorBody) UnmarshalJSON(b []byte) error {
	type plain MessageErrorBody
	return decodeKeeping(b, (*plain)(e), &e.Extra)
}

func (e MessageErrorBody) MarshalJSON() ([]byte, error) {
	type plain MessageErrorBody
	return encodeKeeping(plain(e), e.Extra)
}

// TranscriptData is the data of a transcript message; a partial and the final of one
// utterance share ID.
type TranscriptData struct {
	ID        string    `json:"id"`
	IsFinal   bool      `json:"is_final"`
	Utterance Utterance `json:"utterance"`
}

// SpeechEventData is the data of speech_start and speech_end.
type SpeechEventData struct {
	Time    float64 `json:"time"`
	Channel int     `json:"channel"`
}

// TranslationData is the data of a realtime translation message.
type TranslationData struct {
	UtteranceID         string    `json:"utterance_id"`
	Utterance           Utterance `json:"utterance"`
	OriginalLanguage    string    `json:"original_language"`
	TargetLanguage      string    `json:"target_language"`
	TranslatedUtterance Utterance `json:"translated_utterance"`
}

// NamedEntityData is the data of a realtime named_entity_recognition message.
type NamedEntityData struct {
	UtteranceID string        `json:"utterance_id"`
	Utterance   Utterance     `json:"utterance"`
	Results     []NamedEntity `json:"results"`
}

// NamedEntity is one entity found in an utterance.
type NamedEntity struct {
	EntityType string  `json:"entity_type"`
	Text       string  `json:"text"`
	Start      float64 `json:"start"`
	End        float64 `json:"end"`
}

// SentimentData is the data of a realtime sentiment_analysis message.
type SentimentData struct {
	UtteranceID string      `json:"utterance_id"`
	Utterance   Utterance   `json:"utterance"`
	Results     []Sentiment `json:"results"`
}

// Sentiment is one sentiment judgment.
type Sentiment struct {
	Sentiment string  `json:"sentiment"`
	Emotion   string  `json:"emotion"`
	Text      string  `json:"text"`
	Start     float64 `json:"start"`
	End       float64 `json:"end"`
	Channel   int     `json:"channel"`
}

// PostTranscriptData is the data of post_transcript: the transcription of the whole session.
type PostTranscriptData = Transcription

// PostFinalTranscriptData is the data of post_final_transcript: the whole live result without
// messages.
type PostFinalTranscriptData = Result

// ChapterizationData is the data of post_chapterization: the same chapters as the
// chapterization add-on's results (see ChapterizationResults).
type ChapterizationData struct {
	Results []Chapter `json:"results"`
}

// SummarizationData is the data of post_summarization.
type SummarizationData struct {
	Results string `json:"results"`
}

// AudioChunkAckData is the data of an audio_chunk acknowledgment: bytes and seconds of the
// session's audio covered so far by this chunk.
type AudioChunkAckData struct {
	ByteRange [2]int64   `json:"byte_range"`
	TimeRange [2]float64 `json:"time_range"`
}

// StopRecordingAckData is the data of the stop_recording acknowledgment.
type StopRecordingAckData struct {
	RecordingDuration      float64 `json:"recording_duration"`
	RecordingLeftToProcess float64 `json:"recording_left_to_process"`
}

// EndRecordingData is the data of end_recording.
type EndRecordingData struct {
	RecordingDuration float64 `json:"recording_duration"`
}

// AudioChunkMessage is what a client sends instead of a binary frame.
type AudioChunkMessage struct {
	Type string `json:"type"` // "audio_chunk"
	Data struct {
		Chunk []byte `json:"chunk"` // base64 on the wire
	} `json:"data"`
}

// ClientMessage is any JSON message a client sends over the live WebSocket.
type ClientMessage struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data,omitempty"`
}

// Client message types.
const (
	ClientAudioChunk    = "audio_chunk"
	ClientStopRecording = "stop_recording"
)
