package api

import (
	"encoding/json"
)

// Word is one recognised word; times are seconds from the start of the audio.
type Word struct {
	Word       string  `json:"word"`
	Start      float64 `json:"start"`
	End        float64 `json:"end"`
	Confidence float64 `json:"confidence"`
	Extra      Extra   `json:"-"`
}

func (w *Word) UnmarshalJSON(b []byte) error {
	if decodeWordFast(b, w) {
		return nil
	}
	type plain Word
	return decodeKeeping(b, (*plain)(w), &w.Extra)
}

func (w Word) MarshalJSON() ([]byte, error) {
	if len(w.Extra) == 0 {
		return appendWord(nil, &w) // fastencode.go
	}
	return w.encodeGeneral()
}

// encodeGeneral is the encoding appendWord writes by hand where it can: encodeKeeping of the
// fields.
func (w *Word) encodeGeneral() ([]byte, error) {
	type plain Word
	return encodeKeeping(plain(*w), w.Extra)
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
	Extra      Extra   `json:"-"`
}

func (u *Utterance) UnmarshalJSON(b []byte) error {
	if decodeUtteranceFast(b, u) {
		return nil
	}
	type plain Utterance
	return decodeKeeping(b, (*plain)(u), &u.Extra)
}

func (u Utterance) MarshalJSON() ([]byte, error) {
	if len(u.Extra) == 0 {
		return appendUtterance(nil, &u) // fastencode.go
	}
	return u.encodeGeneral()
}

// encodeGeneral is the encoding appendUtterance writes by hand where it can: encodeKeeping of
// the fields, words as [] when nil.
func (u *Utterance) encodeGeneral() ([]byte, error) {
	type plain Utterance
	p := plain(*u)
	if p.Words == nil {
		p.Words = []Word{}
	}
	return encodeKeeping(p, u.Extra)
}

// AddonError is the error object of an add-on, a translation entry or a sentence envelope.
type AddonError struct {
	StatusCode int    `json:"status_code"`
	Exception  string `json:"exception"`
	Message    string `json:"message"`
	Extra      Extra  `json:"-"`
}

func (e *AddonError) UnmarshalJSON(b []byte) error {
	type plain AddonError
	return decodeKeeping(b, (*plain)(e), &e.Extra)
}

func (e AddonError) MarshalJSON() ([]byte, error) {
	type plain AddonError
	return encodeKeeping(plain(e), e.Extra)
}

// Addon is the envelope of every add-on result; T is the shape of its results field.
type Addon[T any] struct {
	Success  bool        `json:"success"`
	IsEmpty  bool        `json:"is_empty"`
	ExecTime float64     `json:"exec_time"`
	Error    *AddonError `json:"error"`
	Results  T           `json:"results"`
	Extra    Extra       `json:"-"`
}

func (a *Addon[T]) UnmarshalJSON(b []byte) error {
	type plain Addon[T]
	return decodeKeeping(b, (*plain)(a), &a.Extra)
}

func (a Addon[T]) MarshalJSON() ([]byte, error) {
	type plain Addon[T]
	return encodeKeeping(plain(a), a.Extra)
}

// EntityAddon is the named_entity_recognition envelope, whose payload field is entity.
type EntityAddon struct {
	Success  bool        `json:"success"`
	IsEmpty  bool        `json:"is_empty"`
	ExecTime float64     `json:"exec_time"`
	Error    *AddonError `json:"error"`
	Entity   string      `json:"entity"`
	Extra    Extra       `json:"-"`
}

func (a *EntityAddon) UnmarshalJSON(b []byte) error {
	type plain EntityAddon
	return decodeKeeping(b, (*plain)(a), &a.Extra)
}

func (a EntityAddon) MarshalJSON() ([]byte, error) {
	type plain EntityAddon
	return encodeKeeping(plain(a), a.Extra)
}

// Subtitle is one rendered subtitle file.
type Subtitle struct {
	Format    string `json:"format"`
	Subtitles string `json:"subtitles"`
	Extra     Extra  `json:"-"`
}

func (s *Subtitle) UnmarshalJSON(b []byte) error {
	type plain Subtitle
	return decodeKeeping(b, (*plain)(s), &s.Extra)
}

func (s Subtitle) MarshalJSON() ([]byte, error) {
	type plain Subtitle
	return encodeKeeping(plain(s), s.Extra)
}

// Metadata describes the processed audio; times in seconds.
type Metadata struct {
	AudioDuration            float64 `json:"audio_duration"`
	NumberOfDistinctChannels int     `json:"number_of_distinct_channels"`
	BillingTime              float64 `json:"billing_time"`
	TranscriptionTime        float64 `json:"transcription_time"`
	Extra                    Extra   `json:"-"`
}

func (m *Metadata) UnmarshalJSON(b []byte) error {
	type plain Metadata
	return decodeKeeping(b, (*plain)(m), &m.Extra)
}

func (m Metadata) MarshalJSON() ([]byte, error) {
	type plain Metadata
	return encodeKeeping(plain(m), m.Extra)
}

// Transcription is the transcript of a job (and the post_transcript of a live session).
type Transcription struct {
	FullTranscript string            `json:"full_transcript"`
	Languages      []string          `json:"languages"`
	Utterances     []Utterance       `json:"utterances"`
	Sentences      []Addon[[]string] `json:"sentences,omitzero"`
	Subtitles      []Subtitle        `json:"subtitles,omitzero"`
	Extra          Extra             `json:"-"`
}

func (t *Transcription) UnmarshalJSON(b []byte) error {
	if decodeTranscriptionFast(b, t) {
		return nil
	}
	type plain Transcription
	return decodeKeeping(b, (*plain)(t), &t.Extra)
}

func (t Transcription) MarshalJSON() ([]byte, error) {
	if len(t.Extra) == 0 {
		return appendTranscription(make([]byte, 0, t.sizeHint()), &t) // fastencode.go
	}
	return t.encodeGeneral()
}

// encodeGeneral is the encoding appendTranscription writes by hand where it can: encodeKeeping
// of the fields, languages and utterances as [] when nil.
func (t *Transcription) encodeGeneral() ([]byte, error) {
	type plain Transcription
	p := plain(*t)
	if p.Languages == nil {
		p.Languages = []string{}
	}
	if p.Utterances == nil {
		p.Utterances = []Utterance{}
	}
	return encodeKeeping(p, t.Extra)
}

// TranslationResult is one target language of the translation add-on.
type TranslationResult struct {
	Error          *AddonError       `json:"error"`
	FullTranscript string            `json:"full_transcript"`
	Languages      []string          `json:"languages"`
	Utterances     []Utterance       `json:"utterances"`
	Sentences      []Addon[[]string] `json:"sentences,omitzero"`
	Subtitles      []Subtitle        `json:"subtitles,omitzero"`
	Extra          Extra             `json:"-"`
}

func (t *TranslationResult) UnmarshalJSON(b []byte) error {
	type plain TranslationResult
	return decodeKeeping(b, (*plain)(t), &t.Extra)
}

func (t TranslationResult) MarshalJSON() ([]byte, error) {
	type plain TranslationResult
	return encodeKeeping(plain(t), t.Extra)
}

// PromptResponse is one audio_to_llm answer.
type PromptResponse struct {
	Prompt   string `json:"prompt"`
	Response string `json:"response"`
	Extra    Extra  `json:"-"`
}

func (p *PromptResponse) UnmarshalJSON(b []byte) error {
	type plain PromptResponse
	return decodeKeeping(b, (*plain)(p), &p.Extra)
}

func (p PromptResponse) MarshalJSON() ([]byte, error) {
	type plain PromptResponse
	return encodeKeeping(plain(p), p.Extra)
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
	Chapterization           *Addon[json.RawMessage]         `json:"chapterization,omitempty"`
	Diarization              *Addon[[]Utterance]             `json:"diarization,omitempty"`
	Messages                 []string                        `json:"messages,omitzero"`
	Extra                    Extra                           `json:"-"`
}

func (r *Result) UnmarshalJSON(b []byte) error {
	if decodeResultFast(b, r) {
		return nil
	}
	type plain Result
	return decodeKeeping(b, (*plain)(r), &r.Extra)
}

func (r Result) MarshalJSON() ([]byte, error) {
	return appendResult(make([]byte, 0, r.sizeHint()), &r, false) // fastencode.go
}
