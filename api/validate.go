package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxCustomMetadataLength bounds custom_metadata, counted in characters of its compact JSON
// text (provider-facts.md).
const MaxCustomMetadataLength = 2000

// Live region values; the region travels as a query parameter of POST /v2/live.
const (
	RegionUSWest = "us-west"
	RegionEUWest = "eu-west"
)

// ErrValidation is matched by every ValidationErrors, so callers can use errors.Is without
// knowing the concrete type.
var ErrValidation = errors.New("validation failed")

// FieldError is one violated rule.
type FieldError struct {
	// Field is the dotted JSON path of the bad value, e.g.
	// custom_vocabulary_config.vocabulary[2].intensity.
	Field string
	// Message states the rule and the bad value, e.g. "must be between 1 and 8 (got 9)".
	Message string
}

// Sentence is the field followed by the message, as shown to users.
func (e FieldError) Sentence() string { return e.Field + " " + e.Message }

func (e FieldError) Error() string { return e.Sentence() }

// ValidationErrors holds every violation of one request, in a stable order, so that a caller
// fixes them all in one round trip instead of one per attempt.
type ValidationErrors []FieldError

func (v ValidationErrors) Error() string {
	return strings.Join(v.Sentences(), "; ")
}

// Sentences gives one readable sentence per violation, for validation_errors of the REST
// error envelope.
func (v ValidationErrors) Sentences() []string {
	out := make([]string, len(v))
	for i, e := range v {
		out[i] = e.Sentence()
	}
	return out
}

// Is makes errors.Is(err, ErrValidation) true.
func (v ValidationErrors) Is(target error) bool { return target == ErrValidation }

// Err returns v as an error, or nil when there is no violation; returning v directly would
// give a non-nil error holding an empty slice.
func (v ValidationErrors) Err() error {
	if len(v) == 0 {
		return nil
	}
	return v
}

// checker collects violations; every check records and carries on.
type checker struct {
	errs ValidationErrors
}

func (c *checker) add(field, format string, args ...any) {
	c.errs = append(c.errs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) err() error { return c.errs.Err() }

// maxQuoted keeps a sentence readable when the bad value is long.
const maxQuoted = 64

// quote renders a bad string value, shortened.
func quote(s string) string {
	if utf8.RuneCountInString(s) > maxQuoted {
		r := []rune(s)
		s = string(r[:maxQuoted]) + "…"
	}
	return strconv.Quote(s)
}

func quoteList(list []string) string {
	parts := make([]string, len(list))
	for i, s := range list {
		parts[i] = quote(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func (c *checker) oneOf(field, v string, allowed ...string) {
	if v == "" || slices.Contains(allowed, v) {
		return
	}
	c.add(field, "must be one of %s (got %s)", strings.Join(allowed, ", "), quote(v))
}

func (c *checker) intOneOf(field string, v *int, allowed ...int) bool {
	if v == nil || slices.Contains(allowed, *v) {
		return true
	}
	parts := make([]string, len(allowed))
	for i, a := range allowed {
		parts[i] = strconv.Itoa(a)
	}
	c.add(field, "must be one of %s (got %d)", strings.Join(parts, ", "), *v)
	return false
}

// between checks that a present v lies in [lo, hi]; it is written so that NaN, which only Go
// callers can produce, fails too.
func between[T int | float64](c *checker, field string, v *T, lo, hi T) {
	if v != nil && !(*v >= lo && *v <= hi) {
		c.add(field, "must be between %s and %s (got %s)", formatNumber(lo), formatNumber(hi), formatNumber(*v))
	}
}

// atLeast checks that a present v is at least lo (NaN fails).
func atLeast[T int | float64](c *checker, field string, v *T, lo T) {
	if v != nil && !(*v >= lo) {
		c.add(field, "must be at least %s (got %s)", formatNumber(lo), formatNumber(*v))
	}
}

// formatNumber writes a bound or a bad value: an int in decimal, a float as formatFloat does.
func formatNumber[T int | float64](n T) string {
	if f, ok := any(n).(float64); ok {
		return formatFloat(f)
	}
	return strconv.Itoa(int(n))
}

// httpURL reports whether s is an absolute http or https URL naming a host: the service has to
// reach it, so relative references, other schemes and host-less forms are useless.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" {
		return false
	}
	return (u.Scheme == "http" || u.Scheme == "https") && u.Hostname() != ""
}

func (c *checker) url(field, s string) {
	if s != "" && !httpURL(s) {
		c.add(field, "must be an absolute http or https URL with a host (got %s)", quote(s))
	}
}

func (c *checker) language(field, code string) {
	if code != "" && !IsLanguage(code) {
		c.add(field, "must be a supported language code (got %s)", quote(code))
	}
}

func (c *checker) languages(field string, codes []string) {
	for i, code := range codes {
		if code == "" || !IsLanguage(code) {
			c.add(fmt.Sprintf("%s[%d]", field, i), "must be a supported language code (got %s)", quote(code))
		}
	}
}

func (c *checker) nonEmptyStrings(field string, list []string) {
	for i, s := range list {
		if strings.TrimSpace(s) == "" {
			c.add(fmt.Sprintf("%s[%d]", field, i), "must not be empty")
		}
	}
}

// jsonKind names the kind of a valid JSON text, for "must be a JSON object (got array)".
func jsonKind(b []byte) string {
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// metadata checks custom_metadata: absent and null are allowed; anything else must be an
// object whose compact text has at most MaxCustomMetadataLength characters.
func (c *checker) metadata(field string, raw json.RawMessage) {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		c.add(field, "must be a JSON object (got invalid JSON)")
		return
	}
	if b[0] != '{' {
		c.add(field, "must be a JSON object (got %s)", jsonKind(b))
		return
	}
	if n := utf8.RuneCount(buf.Bytes()); n > MaxCustomMetadataLength {
		c.add(field, "must be at most %d characters when serialised (got %d)", MaxCustomMetadataLength, n)
	}
}

func (c *checker) vocabularyTerms(field string, terms []VocabularyTerm) {
	for i, t := range terms {
		p := fmt.Sprintf("%s[%d]", field, i)
		if strings.TrimSpace(t.Value) == "" {
			if t.Plain {
				c.add(p, "must not be empty")
			} else {
				c.add(p+".value", "must not be empty")
			}
		}
		between(c, p+".intensity", t.Intensity, 0, 1)
		c.language(p+".language", t.Language)
	}
}

// customVocabulary checks the flag or list form together with its config; the flag alone
// enables nothing, so it needs terms in the config.
func (c *checker) customVocabulary(prefix string, flag bool, cfg *CustomVocabularyConfig) {
	if cfg != nil {
		c.vocabularyTerms(prefix+"custom_vocabulary_config.vocabulary", cfg.Vocabulary)
		between(c, prefix+"custom_vocabulary_config.default_intensity", cfg.DefaultIntensity, 0, 1)
	}
	if flag && (cfg == nil || len(cfg.Vocabulary) == 0) {
		c.add(prefix+"custom_vocabulary_config.vocabulary", "must contain at least one term when custom_vocabulary is true")
	}
}

func (c *checker) customSpelling(prefix string, enabled bool, cfg *CustomSpellingConfig) {
	if enabled && (cfg == nil || len(cfg.SpellingDictionary) == 0) {
		c.add(prefix+"custom_spelling_config.spelling_dictionary", "must contain at least one entry when custom_spelling is true")
	}
}

func (c *checker) translation(prefix string, enabled bool, cfg *TranslationConfig) {
	field := prefix + "translation_config"
	if cfg != nil {
		c.languages(field+".target_languages", cfg.TargetLanguages)
		c.oneOf(field+".model", cfg.Model, TranslationModelBase, TranslationModelEnhanced)
	}
	if enabled && (cfg == nil || len(cfg.TargetLanguages) == 0) {
		c.add(field+".target_languages", "must contain at least one language when translation is true")
	}
}

func (c *checker) summarization(prefix string, cfg *SummarizationConfig) {
	if cfg != nil {
		c.oneOf(prefix+"summarization_config.type", cfg.Type,
			SummarizationGeneral, SummarizationBulletPoints, SummarizationConcise)
	}
}

func (c *checker) subtitles(cfg *SubtitlesConfig) {
	if cfg == nil {
		return
	}
	if cfg.Formats != nil && len(cfg.Formats) == 0 {
		c.add("subtitles_config.formats", "must contain at least one format")
	}
	for i, f := range cfg.Formats {
		field := fmt.Sprintf("subtitles_config.formats[%d]", i)
		switch {
		case f != SubtitleFormatSRT && f != SubtitleFormatVTT:
			c.add(field, "must be one of %s, %s (got %s)", SubtitleFormatSRT, SubtitleFormatVTT, quote(f))
		case slices.Contains(cfg.Formats[:i], f):
			c.add(field, "must not repeat a format (got %s)", quote(f))
		}
	}
	atLeast(c, "subtitles_config.minimum_duration", cfg.MinimumDuration, 0)
	between(c, "subtitles_config.maximum_duration", cfg.MaximumDuration, 1, 30)
	if lo, hi := cfg.MinimumDuration, cfg.MaximumDuration; lo != nil && hi != nil && *lo > *hi {
		c.add("subtitles_config.minimum_duration", "must not exceed subtitles_config.maximum_duration (got %s > %s)",
			formatFloat(*lo), formatFloat(*hi))
	}
	atLeast(c, "subtitles_config.maximum_characters_per_row", cfg.MaximumCharactersPerRow, 1)
	between(c, "subtitles_config.maximum_rows_per_caption", cfg.MaximumRowsPerCaption, 1, 5)
	c.oneOf("subtitles_config.style", cfg.Style, SubtitleStyleDefault, SubtitleStyleCompliance)
}

func (c *checker) diarization(cfg *DiarizationConfig) {
	if cfg == nil {
		return
	}
	atLeast(c, "diarization_config.number_of_speakers", cfg.NumberOfSpeakers, 1)
	atLeast(c, "diarization_config.min_speakers", cfg.MinSpeakers, 0)
	atLeast(c, "diarization_config.max_speakers", cfg.MaxSpeakers, 0)
	if lo, hi := cfg.MinSpeakers, cfg.MaxSpeakers; lo != nil && hi != nil && *lo > *hi {
		c.add("diarization_config.min_speakers", "must not exceed diarization_config.max_speakers (got %d > %d)", *lo, *hi)
	}
}

// sameLanguages compares two language lists as sets: order and repeats carry no meaning.
func sameLanguages(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

// languageConflicts reports deprecated language fields that contradict each other or the
// explicit language_config. It only compares values the caller set: a nil
// language_config.languages or code_switching is filled by Normalize, not contradicted. The
// deprecated fields are compared with language_config in the order Normalize derives from them
// (code_switching_config, then language, then detect_language), so Validate says the same
// before and after Normalize.
func (c *checker) languageConflicts(r *PreRecordedRequest) {
	detect := IsTrue(r.DetectLanguage)
	var switching []string
	if r.CodeSwitchingConfig != nil {
		switching = r.CodeSwitchingConfig.Languages
	}
	if detect && r.Language != "" {
		c.add("detect_language", "must not be true when language is given (got language %s)", quote(r.Language))
	}
	if r.Language != "" && len(switching) > 0 && !slices.Contains(switching, r.Language) {
		c.add("language", "must be one of code_switching_config.languages when both are given (got %s, not in %s)",
			quote(r.Language), quoteList(switching))
	}
	lc := r.LanguageConfig
	if lc == nil {
		return
	}
	if lc.Languages != nil {
		switch {
		case len(switching) > 0:
			if !sameLanguages(switching, lc.Languages) {
				c.add("code_switching_config.languages", "must match language_config.languages when both are given (got %s and %s)",
					quoteList(switching), quoteList(lc.Languages))
			}
		case r.Language != "":
			if !sameLanguages([]string{r.Language}, lc.Languages) {
				c.add("language", "must match language_config.languages when both are given (got %s and %s)",
					quote(r.Language), quoteList(lc.Languages))
			}
		case detect:
			if len(lc.Languages) > 0 {
				c.add("detect_language", "must not be true when language_config.languages is given (got %s)",
					quoteList(lc.Languages))
			}
		}
	}
	if e, s := r.EnableCodeSwitching, lc.CodeSwitching; e != nil && s != nil && *e != *s {
		c.add("enable_code_switching", "must match language_config.code_switching when both are given (got %t and %t)", *e, *s)
	}
}

// Validate checks a pre-recorded request against the documented rules and returns every
// violation at once as ValidationErrors, or nil. It works on the request as sent or as
// normalised; deprecated fields that contradict their replacements are violations.
func (r *PreRecordedRequest) Validate() error {
	var c checker
	if r.AudioURL == "" {
		c.add("audio_url", "is required")
	} else {
		c.url("audio_url", r.AudioURL)
	}

	if cv := r.CustomVocabulary; cv != nil && cv.IsList {
		if len(cv.Terms) == 0 {
			c.add("custom_vocabulary", "must contain at least one term when given as a list")
		}
		c.vocabularyTerms("custom_vocabulary", cv.Terms)
	}
	flag := r.CustomVocabulary != nil && !r.CustomVocabulary.IsList && r.CustomVocabulary.Enabled
	c.customVocabulary("", flag, r.CustomVocabularyConfig)

	if r.CodeSwitchingConfig != nil {
		c.languages("code_switching_config.languages", r.CodeSwitchingConfig.Languages)
	}
	c.language("language", r.Language)
	c.languageConflicts(r)

	c.url("callback_url", r.CallbackURL)
	if r.CallbackURL != "" && r.Callback != nil && !*r.Callback {
		c.add("callback", "must be true when callback_url is given (got false)")
	}
	if cfg := r.CallbackConfig; cfg != nil {
		c.url("callback_config.url", cfg.URL)
		c.oneOf("callback_config.method", cfg.Method, CallbackMethodPOST, CallbackMethodPUT)
		if r.CallbackURL != "" && cfg.URL != "" && cfg.URL != r.CallbackURL {
			c.add("callback_url", "must match callback_config.url when both are given (got %s and %s)",
				quote(r.CallbackURL), quote(cfg.URL))
		}
	}
	if IsTrue(r.Callback) && r.CallbackURL == "" && (r.CallbackConfig == nil || r.CallbackConfig.URL == "") {
		c.add("callback_config.url", "is required when callback is true")
	}

	c.subtitles(r.SubtitlesConfig)
	c.diarization(r.DiarizationConfig)
	c.translation("", IsTrue(r.Translation), r.TranslationConfig)
	c.summarization("", r.SummarizationConfig)
	c.customSpelling("", IsTrue(r.CustomSpelling), r.CustomSpellingConfig)

	if cfg := r.StructuredDataExtractionConfig; cfg != nil {
		c.nonEmptyStrings("structured_data_extraction_config.classes", cfg.Classes)
	}
	if IsTrue(r.StructuredDataExtraction) && (r.StructuredDataExtractionConfig == nil || len(r.StructuredDataExtractionConfig.Classes) == 0) {
		c.add("structured_data_extraction_config.classes", "must contain at least one class when structured_data_extraction is true")
	}
	if cfg := r.AudioToLLMConfig; cfg != nil {
		c.nonEmptyStrings("audio_to_llm_config.prompts", cfg.Prompts)
	}
	if IsTrue(r.AudioToLLM) && (r.AudioToLLMConfig == nil || len(r.AudioToLLMConfig.Prompts) == 0) {
		c.add("audio_to_llm_config.prompts", "must contain at least one prompt when audio_to_llm is true")
	}

	c.metadata("custom_metadata", r.CustomMetadata)
	if r.LanguageConfig != nil {
		c.languages("language_config.languages", r.LanguageConfig.Languages)
	}
	return c.err()
}

// Validate checks a live session request against the documented bounds and returns every
// violation at once as ValidationErrors, or nil.
//
// A-law and μ-law samples are 8-bit by definition, so with encoding wav/alaw or wav/ulaw a
// given bit_depth must be 8; an absent bit_depth is read as 8 for them (see Settings) rather
// than as the general default of 16.
func (r *LiveRequest) Validate() error {
	var c checker
	c.oneOf("encoding", r.Encoding, EncodingPCM, EncodingALaw, EncodingULaw)
	if c.intOneOf("bit_depth", r.BitDepth, 8, 16, 24, 32) && r.BitDepth != nil && *r.BitDepth != 8 &&
		(r.Encoding == EncodingALaw || r.Encoding == EncodingULaw) {
		c.add("bit_depth", "must be 8 when encoding is %s (got %d)", r.Encoding, *r.BitDepth)
	}
	c.intOneOf("sample_rate", r.SampleRate, 8000, 16000, 32000, 44100, 48000)
	between(&c, "channels", r.Channels, 1, 8)
	c.metadata("custom_metadata", r.CustomMetadata)
	c.oneOf("model", r.Model, LiveModels()...)
	between(&c, "endpointing", r.Endpointing, 0.01, 10)
	between(&c, "maximum_duration_without_endpointing", r.MaximumDurationWithoutEndpointing, 5, 60)
	if r.LanguageConfig != nil {
		c.languages("language_config.languages", r.LanguageConfig.Languages)
	}
	if p := r.PreProcessing; p != nil {
		between(&c, "pre_processing.speech_threshold", p.SpeechThreshold, 0, 1)
	}
	if p := r.RealtimeProcessing; p != nil {
		const prefix = "realtime_processing."
		c.customVocabulary(prefix, IsTrue(p.CustomVocabulary), p.CustomVocabularyConfig)
		c.customSpelling(prefix, IsTrue(p.CustomSpelling), p.CustomSpellingConfig)
		c.translation(prefix, IsTrue(p.Translation), p.TranslationConfig)
	}
	if p := r.PostProcessing; p != nil {
		c.summarization("post_processing.", p.SummarizationConfig)
	}
	if cfg := r.CallbackConfig; cfg != nil {
		c.url("callback_config.url", cfg.URL)
	}
	if IsTrue(r.Callback) && (r.CallbackConfig == nil || r.CallbackConfig.URL == "") {
		c.add("callback_config.url", "is required when callback is true")
	}
	return c.err()
}

// ValidateRegion checks the region query parameter of POST /v2/live; empty means the
// service's choice.
func ValidateRegion(region string) error {
	var c checker
	c.oneOf("region", region, RegionUSWest, RegionEUWest)
	return c.err()
}
