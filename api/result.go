package api

import (
	"encoding/json"
	"errors"
)

// The result types below are the service's result as the sandbox writes it and as a user
// decodes it (Job.DecodeResult). scribehook itself keeps a result as the raw JSON the service
// sent (Job.Result) and decodes only the parts it reads, so these types keep no unknown
// members: nothing re-encodes a received result from them.

// Word is one recognised word; times are seconds from the start of the audio.
type Word struct {
	Word       string  `json:"word"`
	Start      float64 `json:"start"`
	End        float64 `json:"end"`
	Confidence float64 `json:"confidence"`
}

// Utterance is a stretch of speech by one speaker on one channel.
type Utterance struct {
	Start      float64 `json:"start"`
	End        float64 `json:"end"`
	Confidence float64 `json:"confidence"`
	Channel    int     `json:"channel"`
	Words      []Word  `json:"words"`
	Text       string  `json:"text"`
	Language   string  `json:"language,omitempty"`
	Speaker    *int    `json:"speaker,omitempty"`
}

// MarshalJSON writes words as [] when there are none, as the service does.
func (u Utterance) MarshalJSON() ([]byte, error) {
	type plain Utterance
	if u.Words == nil {
		u.Words = []Word{}
	}
	return json.Marshal(plain(u))
}

// AddonError is the error object of an add-on, a translation entry or a sentence envelope.
type AddonError struct {
	StatusCode int    `json:"status_code"`
	Exception  string `json:"exception"`
	Message    string `json:"message"`
}

// Addon is the envelope of every add-on result; T is the shape of its results field.
type Addon[T any] struct {
	Success  bool        `json:"success"`
	IsEmpty  bool        `json:"is_empty"`
	ExecTime float64     `json:"exec_time"`
	Error    *AddonError `json:"error"`
	Results  T           `json:"results"`
}

// EntityAddon is the named_entity_recognition envelope. The service sends its entities in
// results, as the live message does (docs/spec/provider-facts.md); the interface text names the
// payload entity, a string. Both are read: an entity that holds a JSON array of entities (as
// text or as the array itself) fills Results when results is absent or null.
type EntityAddon struct {
	Success  bool          `json:"success"`
	IsEmpty  bool          `json:"is_empty"`
	ExecTime float64       `json:"exec_time"`
	Error    *AddonError   `json:"error"`
	Results  []NamedEntity `json:"results"`
	// Entity is the text of an entity member sent as a string, kept as it came.
	Entity string `json:"entity,omitempty"`
}

func (e *EntityAddon) UnmarshalJSON(b []byte) error {
	type plain EntityAddon
	var p struct {
		plain
		Entity json.RawMessage `json:"entity"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*e = EntityAddon(p.plain)
	switch firstByte(p.Entity) {
	case '"':
		if err := json.Unmarshal(p.Entity, &e.Entity); err != nil {
			return err
		}
		if e.Results == nil {
			e.Results = entitiesIn([]byte(e.Entity))
		}
	case '[':
		if e.Results == nil {
			e.Results = entitiesIn(p.Entity)
		}
	case 0, 'n':
	default:
		return errors.New("decode named_entity_recognition: entity is neither a string nor an array")
	}
	return nil
}

// entitiesIn reads a JSON array of entities, nil when b is not one: a free-text entity is kept
// in Entity only.
func entitiesIn(b []byte) []NamedEntity {
	var list []NamedEntity
	if firstByte(b) != '[' || json.Unmarshal(b, &list) != nil {
		return nil
	}
	return list
}

// Subtitle is one rendered subtitle file.
type Subtitle struct {
	Format    string `json:"format"`
	Subtitles string `json:"subtitles"`
}

// Metadata describes the processed audio; times in seconds.
type Metadata struct {
	AudioDuration            float64 `json:"audio_duration"`
	NumberOfDistinctChannels int     `json:"number_of_distinct_channels"`
	BillingTime              float64 `json:"billing_time"`
	TranscriptionTime        float64 `json:"transcription_time"`
}

// Transcription is the transcript of a job (and the post_transcript of a live session).
type Transcription struct {
	FullTranscript string            `json:"full_transcript"`
	Languages      []string          `json:"languages"`
	Utterances     []Utterance       `json:"utterances"`
	Sentences      []Addon[[]string] `json:"sentences,omitzero"`
	Subtitles      []Subtitle        `json:"subtitles,omitzero"`
}

// MarshalJSON writes languages and utterances as [] when there are none, as the service does.
func (t Transcription) MarshalJSON() ([]byte, error) {
	type plain Transcription
	if t.Languages == nil {
		t.Languages = []string{}
	}
	if t.Utterances == nil {
		t.Utterances = []Utterance{}
	}
	return json.Marshal(plain(t))
}

// TranslationResult is one target language of the translation add-on.
type TranslationResult struct {
	Error          *AddonError       `json:"error"`
	FullTranscript string            `json:"full_transcript"`
	Languages      []string          `json:"languages"`
	Utterances     []Utterance       `json:"utterances"`
	Sentences      []Addon[[]string] `json:"sentences,omitzero"`
	Subtitles      []Subtitle        `json:"subtitles,omitzero"`
}

// PromptResponse is one audio_to_llm answer.
type PromptResponse struct {
	Prompt   string `json:"prompt"`
	Response string `json:"response"`
}

// Result is the result of a job: every field of the pre-recorded result, plus messages for a
// live session (whose result has a subset of the add-ons).
type Result struct {
	Metadata                 *Metadata                       `json:"metadata,omitempty"`
	Transcription            *Transcription                  `json:"transcription,omitempty"`
	Translation              *Addon[[]TranslationResult]     `json:"translation,omitempty"`
	Summarization            *Addon[string]                  `json:"summarization,omitempty"`
	Moderation               *Addon[string]                  `json:"moderation,omitempty"`
	NamedEntityRecognition   *EntityAddon                    `json:"named_entity_recognition,omitempty"`
	NameConsistency          *Addon[string]                  `json:"name_consistency,omitempty"`
	SpeakerReidentification  *Addon[string]                  `json:"speaker_reidentification,omitempty"`
	StructuredDataExtraction *Addon[string]                  `json:"structured_data_extraction,omitempty"`
	SentimentAnalysis        *Addon[string]                  `json:"sentiment_analysis,omitempty"`
	AudioToLLM               *Addon[[]Addon[PromptResponse]] `json:"audio_to_llm,omitempty"`
	Sentences                *Addon[[]string]                `json:"sentences,omitempty"`
	DisplayMode              *Addon[[]string]                `json:"display_mode,omitempty"`
	Chapterization           *Addon[ChapterizationResults]   `json:"chapterization,omitempty"`
	Diarization              *Addon[[]Utterance]             `json:"diarization,omitempty"`
	Messages                 []string                        `json:"messages,omitzero"`
}

// RawResult encodes r as a job record's result (Job.Result); nil for a nil r.
func RawResult(r *Result) json.RawMessage {
	if r == nil {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		// Only a NaN or an infinite time fails, which no result holds.
		panic("api: encode result: " + err.Error())
	}
	return b
}

// DecodeResult decodes a raw result (Job.Result, a callback's payload); nil for none or null.
func DecodeResult(raw json.RawMessage) (*Result, error) {
	if isNull(raw) {
		return nil, nil
	}
	r := new(Result)
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, err
	}
	return r, nil
}

// TranscriptLanguage is the first language of a raw result's transcription, "" when it has
// none or does not decode; only that member is decoded.
func TranscriptLanguage(raw json.RawMessage) string {
	var v struct {
		Transcription *struct {
			Languages []string `json:"languages"`
		} `json:"transcription"`
	}
	if isNull(raw) || json.Unmarshal(raw, &v) != nil || v.Transcription == nil || len(v.Transcription.Languages) == 0 {
		return ""
	}
	return v.Transcription.Languages[0]
}
