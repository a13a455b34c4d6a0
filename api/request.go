package api

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Bool returns a pointer to b, for the optional flags of requests.
func Bool(b bool) *bool { return &b }

// Int returns a pointer to n.
func Int(n int) *int { return &n }

// Float returns a pointer to f.
func Float(f float64) *float64 { return &f }

// IsTrue reports whether an optional flag is set and true.
func IsTrue(b *bool) bool { return b != nil && *b }

// PreRecordedRequest is the body that creates a pre-recorded job (§2.3). Optional flags are
// pointers so that "absent" (the service's default) and "false" stay different, and so that
// request_params echoes what was sent.
type PreRecordedRequest struct {
	AudioURL                       string                          `json:"audio_url"`
	ContextPrompt                  string                          `json:"context_prompt,omitempty"` // deprecated
	CustomVocabulary               *CustomVocabulary               `json:"custom_vocabulary,omitempty"`
	CustomVocabularyConfig         *CustomVocabularyConfig         `json:"custom_vocabulary_config,omitempty"`
	DetectLanguage                 *bool                           `json:"detect_language,omitempty"`       // deprecated
	EnableCodeSwitching            *bool                           `json:"enable_code_switching,omitempty"` // deprecated
	CodeSwitchingConfig            *CodeSwitchingConfig            `json:"code_switching_config,omitempty"` // deprecated
	Language                       string                          `json:"language,omitempty"`              // deprecated
	CallbackURL                    string                          `json:"callback_url,omitempty"`          // deprecated
	Callback                       *bool                           `json:"callback,omitempty"`
	CallbackConfig                 *CallbackConfig                 `json:"callback_config,omitempty"`
	Subtitles                      *bool                           `json:"subtitles,omitempty"`
	SubtitlesConfig                *SubtitlesConfig                `json:"subtitles_config,omitempty"`
	Diarization                    *bool                           `json:"diarization,omitempty"`
	DiarizationConfig              *DiarizationConfig              `json:"diarization_config,omitempty"`
	Translation                    *bool                           `json:"translation,omitempty"`
	TranslationConfig              *TranslationConfig              `json:"translation_config,omitempty"`
	Summarization                  *bool                           `json:"summarization,omitempty"`
	SummarizationConfig            *SummarizationConfig            `json:"summarization_config,omitempty"`
	Moderation                     *bool                           `json:"moderation,omitempty"`
	NamedEntityRecognition         *bool                           `json:"named_entity_recognition,omitempty"`
	Chapterization                 *bool                           `json:"chapterization,omitempty"`
	NameConsistency                *bool                           `json:"name_consistency,omitempty"`
	CustomSpelling                 *bool                           `json:"custom_spelling,omitempty"`
	CustomSpellingConfig           *CustomSpellingConfig           `json:"custom_spelling_config,omitempty"`
	StructuredDataExtraction       *bool                           `json:"structured_data_extraction,omitempty"`
	StructuredDataExtractionConfig *StructuredDataExtractionConfig `json:"structured_data_extraction_config,omitempty"`
	SentimentAnalysis              *bool                           `json:"sentiment_analysis,omitempty"`
	AudioToLLM                     *bool                           `json:"audio_to_llm,omitempty"`
	AudioToLLMConfig               *AudioToLLMConfig               `json:"audio_to_llm_config,omitempty"`
	CustomMetadata                 json.RawMessage                 `json:"custom_metadata,omitempty"`
	Sentences                      *bool                           `json:"sentences,omitempty"`
	DisplayMode                    *bool                           `json:"display_mode,omitempty"`
	PunctuationEnhanced            *bool                           `json:"punctuation_enhanced,omitempty"`
	LanguageConfig                 *LanguageConfig                 `json:"language_config,omitempty"`

	Extra Extra `json:"-"`
}

func (r *PreRecordedRequest) UnmarshalJSON(b []byte) error {
	type plain PreRecordedRequest
	return decodeKeeping(b, (*plain)(r), &r.Extra)
}

func (r PreRecordedRequest) MarshalJSON() ([]byte, error) {
	type plain PreRecordedRequest
	return encodeKeeping(plain(r), r.Extra)
}

// CustomVocabulary is the custom_vocabulary field: either a flag or directly a vocabulary list.
type CustomVocabulary struct {
	Enabled bool             // the flag form; also true when Terms is used
	Terms   []VocabularyTerm // the list form, when IsList
	IsList  bool
}

func (c CustomVocabulary) MarshalJSON() ([]byte, error) {
	if c.IsList {
		if c.Terms == nil {
			return []byte("[]"), nil
		}
		return json.Marshal(c.Terms)
	}
	return json.Marshal(c.Enabled)
}

func (c *CustomVocabulary) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		*c = CustomVocabulary{IsList: true, Enabled: true}
		return json.Unmarshal(b, &c.Terms)
	}
	var flag bool
	if err := json.Unmarshal(b, &flag); err != nil {
		return fmt.Errorf("custom_vocabulary must be a boolean or an array of terms")
	}
	*c = CustomVocabulary{Enabled: flag}
	return nil
}

// CustomVocabularyConfig is §2.3.1.
type CustomVocabularyConfig struct {
	Vocabulary       []VocabularyTerm `json:"vocabulary,omitempty"`
	DefaultIntensity *float64         `json:"default_intensity,omitempty"`
	Extra            Extra            `json:"-"`
}

func (c *CustomVocabularyConfig) UnmarshalJSON(b []byte) error {
	type plain CustomVocabularyConfig
	return decodeKeeping(b, (*plain)(c), &c.Extra)
}

func (c CustomVocabularyConfig) MarshalJSON() ([]byte, error) {
	type plain CustomVocabularyConfig
	return encodeKeeping(plain(c), c.Extra)
}

// VocabularyTerm is one vocabulary element: a plain string or an object. A term decoded from a
// plain string encodes back as one.
type VocabularyTerm struct {
	Value          string   `json:"value"`
	Pronunciations []string `json:"pronunciations,omitempty"`
	Intensity      *float64 `json:"intensity,omitempty"`
	Language       string   `json:"language,omitempty"`
	Plain          bool     `json:"-"`
	Extra          Extra    `json:"-"`
}

func (v VocabularyTerm) MarshalJSON() ([]byte, error) {
	if v.Plain && v.Pronunciations == nil && v.Intensity == nil && v.Language == "" && len(v.Extra) == 0 {
		return json.Marshal(v.Value)
	}
	type plain VocabularyTerm
	return encodeKeeping(plain(v), v.Extra)
}

func (v *VocabularyTerm) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*v = VocabularyTerm{Plain: true}
		return json.Unmarshal(b, &v.Value)
	}
	if len(b) == 0 || b[0] != '{' {
		return fmt.Errorf("vocabulary term must be a string or an object")
	}
	type plain VocabularyTerm
	return decodeKeeping(b, (*plain)(v), &v.Extra)
}

// CodeSwitchingConfig is the deprecated code_switching_config.
type CodeSwitchingConfig struct {
	Languages []string `json:"languages,omitempty"`
	Extra     Extra    `json:"-"`
}

func (c *CodeSwitchingConfig) UnmarshalJSON(b []byte) error {
	type plain CodeSwitchingConfig
	return decodeKeeping(b, (*plain)(c), &c.Extra)
}

func (c CodeSwitchingConfig) MarshalJSON() ([]byte, error) {
	type plain CodeSwitchingConfig
	return encodeKeeping(plain(c), c.Extra)
}

// LanguageConfig is the current way to set language handling. An empty Languages list means
// detect the language.
type LanguageConfig struct {
	Languages     []string `json:"languages"`
	CodeSwitching *bool    `json:"code_switching,omitempty"`
	Extra         Extra    `json:"-"`
}

func (c *LanguageConfig) UnmarshalJSON(b []byte) error {
	type plain LanguageConfig
	return decodeKeeping(b, (*plain)(c), &c.Extra)
}

func (c LanguageConfig) MarshalJSON() ([]byte, error) {
	type plain LanguageConfig
	return encodeKeeping(plain(c), c.Extra)
}

// CallbackConfig is the pre-recorded callback address and method.
type CallbackConfig struct {
	URL    string `json:"url,omitempty"`
	Method string `json:"method,omitempty"`
	Extra  Extra  `json:"-"`
}

func (c *CallbackConfig) UnmarshalJSON(b []byte) error {
	type plain CallbackConfig
	return decodeKeeping(b, (*plain)(c), &c.Extra)
}

func (c CallbackConfig) MarshalJSON() ([]byte, error) {
	type plain CallbackConfig
	return encodeKeeping(plain(c), c.Extra)
}

// SubtitlesConfig is §2.3.2.
type SubtitlesConfig struct {
	Formats                 []string `json:"formats,omitempty"`
	MinimumDuration         *float64 `json:"minimum_duration,omitempty"`
	MaximumDuration         *float64 `json:"maximum_duration,omitempty"`
	MaximumCharactersPerRow *int     `json:"maximum_characters_per_row,omitempty"`
	MaximumRowsPerCaption   *int     `json:"maximum_rows_per_caption,omitempty"`
	Style                   string   `json:"style,omitempty"`
	Extra                   Extra    `json:"-"`
}

func (c *SubtitlesConfig) UnmarshalJSON(b []byte) error {
	type plain SubtitlesConfig
	return decodeKeeping(b, (*plain)(c), &c.Extra)
}

func (c SubtitlesConfig) MarshalJSON() ([]byte, error) {
	type plain SubtitlesConfig
	return encodeKeeping(plain(c), c.Extra)
}

// DiarizationConfig is the speaker-count hint of diarization.
type DiarizationConfig struct {
	NumberOfSpeakers *int  `json:"number_of_speakers,omitempty"`
	MinSpeakers      *int  `json:"min_speakers,omitempty"`
	MaxSpeakers      *int  `json:"max_speakers,omitempty"`
	Extra            Extra `json:"-"`
}

func (c *DiarizationConfig) UnmarshalJSON(b []byte) error {
	type plain DiarizationConfig
	return decodeKeeping(b, (*plain)(c), &c.Extra)
}

func (c DiarizationConfig) MarshalJSON() ([]byte, error) {
	type plain DiarizationConfig
	return encodeKeeping(plain(c), c.Extra)
}

// TranslationConfig is §2.3.3, used by pre-recorded jobs and live realtime processing.
type TranslationConfig struct {
	TargetLanguages         []string `json:"target_languages"`
	Model                   string   `json:"model,omitempty"`
	MatchOriginalUtterances *bool    `json:"match_original_utterances,omitempty"`
	Lipsync                 *bool    `json:"lipsync,omitempty"`
	ContextAdaptation       *bool    `json:"context_adaptation,omitempty"`
	Context                 string   `json:"context,omitempty"`
	Informal                *bool    `json:"informal,omitempty"`
	Extra                   Extra    `json:"-"`
}

func (c *TranslationConfig) UnmarshalJSON(b []byte) error {
	type plain TranslationConfig
	return decodeKeeping(b, (*plain)(c), &c.Extra)
}

func (c TranslationConfig) MarshalJSON() ([]byte, error) {
	type plain TranslationConfig
	return encodeKeeping(plain(c), c.Extra)
}

// SummarizationConfig selects the kind of summary.
type SummarizationConfig struct {
	Type  string `json:"type,omitempty"`
	Extra Extra  `json:"-"`
}

func (c *SummarizationConfig) UnmarshalJSON(b []byte) error {
	type plain SummarizationConfig
	return decodeKeeping(b, (*plain)(c), &c.Extra)
}

func (c SummarizationConfig) MarshalJSON() ([]byte, error) {
	type plain SummarizationConfig
	return encodeKeeping(plain(c), c.Extra)
}

// CustomSpellingConfig maps each target spelling to the variants it replaces.
type CustomSpellingConfig struct {
	SpellingDictionary map[string][]string `json:"spelling_dictionary"`
	Extra              Extra               `json:"-"`
}

func (c *CustomSpellingConfig) UnmarshalJSON(b []byte) error {
	type plain CustomSpellingConfig
	return decodeKeeping(b, (*plain)(c), &c.Extra)
}

func (c CustomSpellingConfig) MarshalJSON() ([]byte, error) {
	type plain CustomSpellingConfig
	return encodeKeeping(plain(c), c.Extra)
}

// StructuredDataExtractionConfig lists the entity classes to extract.
type StructuredDataExtractionConfig struct {
	Classes []string `json:"classes"`
	Extra   Extra    `json:"-"`
}

func (c *StructuredDataExtractionConfig) UnmarshalJSON(b []byte) error {
	type plain StructuredDataExtractionConfig
	return decodeKeeping(b, (*plain)(c), &c.Extra)
}

func (c StructuredDataExtractionConfig) MarshalJSON() ([]byte, error) {
	type plain StructuredDataExtractionConfig
	return encodeKeeping(plain(c), c.Extra)
}

// AudioToLLMConfig holds the prompts; one result per prompt.
type AudioToLLMConfig struct {
	Prompts []string `json:"prompts"`
	Extra   Extra    `json:"-"`
}

func (c *AudioToLLMConfig) UnmarshalJSON(b []byte) error {
	type plain AudioToLLMConfig
	return decodeKeeping(b, (*plain)(c), &c.Extra)
}

func (c AudioToLLMConfig) MarshalJSON() ([]byte, error) {
	type plain AudioToLLMConfig
	return encodeKeeping(plain(c), c.Extra)
}

// Sample format defaults of a live session (provider-facts.md).
const (
	DefaultLiveEncoding                          = "wav/pcm"
	DefaultLiveBitDepth                          = 16
	DefaultLiveSampleRate                        = 16000
	DefaultLiveChannels                          = 1
	DefaultLiveEndpointing                       = 0.05
	DefaultLiveMaximumDurationWithoutEndpointing = 5.0
	DefaultSpeechThreshold                       = 0.6
	// DefaultLiveModel is the model of a session that names none: the official SDKs type the
	// field as this one name and document it as the default. The interface writes it
	// <default_model> (LiveModelPlaceholder).
	DefaultLiveModel = "solaria-1"
	// LiveModelPlaceholder is the interface's name for the default model, still accepted since
	// clients written from the interface send it.
	LiveModelPlaceholder = "<default_model>"
)

// LiveModels is the one list of model names a live session accepts, the default first.
func LiveModels() []string { return []string{DefaultLiveModel, LiveModelPlaceholder} }

// LiveRequest is the body that creates a live session (§2.4). The region travels as a query
// parameter, not in the body.
type LiveRequest struct {
	Encoding                          string              `json:"encoding,omitempty"`
	BitDepth                          *int                `json:"bit_depth,omitempty"`
	SampleRate                        *int                `json:"sample_rate,omitempty"`
	Channels                          *int                `json:"channels,omitempty"`
	CustomMetadata                    json.RawMessage     `json:"custom_metadata,omitempty"`
	Model                             string              `json:"model,omitempty"`
	Endpointing                       *float64            `json:"endpointing,omitempty"`
	MaximumDurationWithoutEndpointing *float64            `json:"maximum_duration_without_endpointing,omitempty"`
	LanguageConfig                    *LanguageConfig     `json:"language_config,omitempty"`
	PreProcessing                     *PreProcessing      `json:"pre_processing,omitempty"`
	RealtimeProcessing                *RealtimeProcessing `json:"realtime_processing,omitempty"`
	PostProcessing                    *PostProcessing     `json:"post_processing,omitempty"`
	MessagesConfig                    *MessagesConfig     `json:"messages_config,omitempty"`
	Callback                          *bool               `json:"callback,omitempty"`
	CallbackConfig                    *LiveCallbackConfig `json:"callback_config,omitempty"`

	Extra Extra `json:"-"`
}

func (r *LiveRequest) UnmarshalJSON(b []byte) error {
	type plain LiveRequest
	return decodeKeeping(b, (*plain)(r), &r.Extra)
}

func (r LiveRequest) MarshalJSON() ([]byte, error) {
	type plain LiveRequest
	return encodeKeeping(plain(r), r.Extra)
}

// PreProcessing is the audio pre-processing of a live session.
type PreProcessing struct {
	AudioEnhancer   *bool    `json:"audio_enhancer,omitempty"`
	SpeechThreshold *float64 `json:"speech_threshold,omitempty"`
}

// RealtimeProcessing holds the add-ons applied while a live session streams.
type RealtimeProcessing struct {
	CustomVocabulary       *bool                   `json:"custom_vocabulary,omitempty"`
	CustomVocabularyConfig *CustomVocabularyConfig `json:"custom_vocabulary_config,omitempty"`
	CustomSpelling         *bool                   `json:"custom_spelling,omitempty"`
	CustomSpellingConfig   *CustomSpellingConfig   `json:"custom_spelling_config,omitempty"`
	Translation            *bool                   `json:"translation,omitempty"`
	TranslationConfig      *TranslationConfig      `json:"translation_config,omitempty"`
	NamedEntityRecognition *bool                   `json:"named_entity_recognition,omitempty"`
	SentimentAnalysis      *bool                   `json:"sentiment_analysis,omitempty"`
}

// PostProcessing holds the add-ons applied after a live session.
type PostProcessing struct {
	Summarization       *bool                `json:"summarization,omitempty"`
	SummarizationConfig *SummarizationConfig `json:"summarization_config,omitempty"`
	Chapterization      *bool                `json:"chapterization,omitempty"`
}

// MessagesConfig holds the nine category flags. Absent flags take the defaults of where the
// flags are used: MessagesConfig.WebSocketCategories resolves them for the WebSocket,
// LiveCallbackConfig.CallbackCategories for callbacks.
type MessagesConfig struct {
	ReceivePartialTranscripts       *bool `json:"receive_partial_transcripts,omitempty"`
	ReceiveFinalTranscripts         *bool `json:"receive_final_transcripts,omitempty"`
	ReceiveSpeechEvents             *bool `json:"receive_speech_events,omitempty"`
	ReceivePreProcessingEvents      *bool `json:"receive_pre_processing_events,omitempty"`
	ReceiveRealtimeProcessingEvents *bool `json:"receive_realtime_processing_events,omitempty"`
	ReceivePostProcessingEvents     *bool `json:"receive_post_processing_events,omitempty"`
	ReceiveAcknowledgments          *bool `json:"receive_acknowledgments,omitempty"`
	ReceiveErrors                   *bool `json:"receive_errors,omitempty"`
	ReceiveLifecycleEvents          *bool `json:"receive_lifecycle_events,omitempty"`
}

// LiveCallbackConfig is the live callback address plus the nine category flags.
type LiveCallbackConfig struct {
	URL string `json:"url,omitempty"`
	MessagesConfig
}
