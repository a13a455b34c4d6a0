package api

import (
	"cmp"
	"slices"
)

// Allowed values of request fields (provider-facts.md, "Defaults of request fields").
const (
	SubtitleFormatSRT = "srt"
	SubtitleFormatVTT = "vtt"

	SubtitleStyleDefault    = "default"
	SubtitleStyleCompliance = "compliance"

	SummarizationGeneral      = "general"
	SummarizationBulletPoints = "bullet_points"
	SummarizationConcise      = "concise"

	TranslationModelBase     = "base"
	TranslationModelEnhanced = "enhanced"

	CallbackMethodPOST = "POST"
	CallbackMethodPUT  = "PUT"

	EncodingPCM  = "wav/pcm"
	EncodingALaw = "wav/alaw"
	EncodingULaw = "wav/ulaw"
)

// Defaults of pre-recorded request fields that the service applies when they are absent.
const (
	DefaultSubtitleFormat    = SubtitleFormatSRT
	DefaultSummarizationType = SummarizationGeneral
	DefaultTranslationModel  = TranslationModelBase
	DefaultCallbackMethod    = CallbackMethodPOST
)

// Normalize maps the deprecated fields onto their replacements, so that request_params shows
// what the job really uses:
//
//   - language, detect_language, enable_code_switching and code_switching_config.languages
//     become language_config (languages from code_switching_config, else [language], else []
//     meaning detect; code_switching from enable_code_switching);
//   - callback_url becomes callback true and callback_config {url, method POST}.
//
// The deprecated fields stay as sent, so the caller still sees them. Values the caller set
// explicitly are never overwritten, only absent ones filled; contradictions are left for
// Validate to report. Normalize is idempotent.
func (r *PreRecordedRequest) Normalize() {
	langs, hasLangs := r.deprecatedLanguages()
	switch lc := r.LanguageConfig; {
	case lc == nil:
		if hasLangs || r.EnableCodeSwitching != nil {
			if langs == nil {
				langs = []string{}
			}
			r.LanguageConfig = &LanguageConfig{Languages: langs}
			if r.EnableCodeSwitching != nil {
				r.LanguageConfig.CodeSwitching = Bool(*r.EnableCodeSwitching)
			}
		}
	default:
		if lc.Languages == nil && hasLangs {
			lc.Languages = langs
		}
		if lc.CodeSwitching == nil && r.EnableCodeSwitching != nil {
			lc.CodeSwitching = Bool(*r.EnableCodeSwitching)
		}
	}

	if r.CallbackURL != "" {
		if r.Callback == nil {
			r.Callback = Bool(true)
		}
		switch cfg := r.CallbackConfig; {
		case cfg == nil:
			r.CallbackConfig = &CallbackConfig{URL: r.CallbackURL, Method: CallbackMethodPOST}
		case cfg.URL == "":
			cfg.URL = r.CallbackURL
			if cfg.Method == "" {
				cfg.Method = CallbackMethodPOST
			}
		}
	}
}

// deprecatedLanguages derives language_config.languages from the deprecated fields, in the
// order of precedence Normalize uses; ok is false when none of them says anything about
// languages. The result is a fresh slice.
func (r *PreRecordedRequest) deprecatedLanguages() (langs []string, ok bool) {
	switch {
	case r.CodeSwitchingConfig != nil && len(r.CodeSwitchingConfig.Languages) > 0:
		return slices.Clone(r.CodeSwitchingConfig.Languages), true
	case r.Language != "":
		return []string{r.Language}, true
	case IsTrue(r.DetectLanguage):
		return []string{}, true
	}
	return nil, false
}

// EffectiveMethod is the HTTP method of the callback: the configured one, else POST.
func (c *CallbackConfig) EffectiveMethod() string {
	if c == nil || c.Method == "" {
		return DefaultCallbackMethod
	}
	return c.Method
}

// EffectiveFormats are the subtitle formats to produce: the configured ones, else ["srt"].
func (c *SubtitlesConfig) EffectiveFormats() []string {
	if c == nil || len(c.Formats) == 0 {
		return []string{DefaultSubtitleFormat}
	}
	return slices.Clone(c.Formats)
}

// EffectiveType is the summary kind: the configured one, else general.
func (c *SummarizationConfig) EffectiveType() string {
	if c == nil || c.Type == "" {
		return DefaultSummarizationType
	}
	return c.Type
}

// EffectiveModel is the translation model: the configured one, else base.
func (c *TranslationConfig) EffectiveModel() string {
	if c == nil || c.Model == "" {
		return DefaultTranslationModel
	}
	return c.Model
}

// LiveSettings are the effective audio and endpointing settings of a live session, with the
// service's defaults in place of absent fields.
type LiveSettings struct {
	Encoding                          string
	BitDepth                          int
	SampleRate                        int
	Channels                          int
	Model                             string
	Endpointing                       float64 // seconds
	MaximumDurationWithoutEndpointing float64 // seconds
	SpeechThreshold                   float64
	AudioEnhancer                     bool
}

// BytesPerSample is the size of one sample of one channel.
func (s LiveSettings) BytesPerSample() int { return (s.BitDepth + 7) / 8 }

// BytesPerSecond is the size of one second of the stream, all channels together; the sandbox
// uses it to turn byte ranges into the time ranges of audio_chunk acknowledgments.
func (s LiveSettings) BytesPerSecond() int { return s.SampleRate * s.Channels * s.BytesPerSample() }

// Settings returns the effective settings of the session. An absent bit_depth is 8 for the
// A-law and μ-law encodings (their samples are 8-bit) and 16 otherwise. A nil request gives
// the defaults.
func (r *LiveRequest) Settings() LiveSettings {
	s := LiveSettings{
		Encoding:                          DefaultLiveEncoding,
		BitDepth:                          DefaultLiveBitDepth,
		SampleRate:                        DefaultLiveSampleRate,
		Channels:                          DefaultLiveChannels,
		Model:                             DefaultLiveModel,
		Endpointing:                       DefaultLiveEndpointing,
		MaximumDurationWithoutEndpointing: DefaultLiveMaximumDurationWithoutEndpointing,
		SpeechThreshold:                   DefaultSpeechThreshold,
	}
	if r == nil {
		return s
	}
	s.Encoding = cmp.Or(r.Encoding, s.Encoding)
	if s.Encoding == EncodingALaw || s.Encoding == EncodingULaw {
		s.BitDepth = 8
	}
	setIfPresent(&s.BitDepth, r.BitDepth)
	setIfPresent(&s.SampleRate, r.SampleRate)
	setIfPresent(&s.Channels, r.Channels)
	s.Model = cmp.Or(r.Model, s.Model)
	setIfPresent(&s.Endpointing, r.Endpointing)
	setIfPresent(&s.MaximumDurationWithoutEndpointing, r.MaximumDurationWithoutEndpointing)
	if p := r.PreProcessing; p != nil {
		setIfPresent(&s.SpeechThreshold, p.SpeechThreshold)
		s.AudioEnhancer = IsTrue(p.AudioEnhancer)
	}
	return s
}

// setIfPresent sets *dst to *v when the request has the field (v is not nil); an absent one
// leaves the default in *dst.
func setIfPresent[T any](dst, v *T) {
	if v != nil {
		*dst = *v
	}
}

// WithDefaults returns a copy of the request with the settings of Settings written into it
// (encoding, bit_depth, sample_rate, channels, model, endpointing,
// maximum_duration_without_endpointing, pre_processing.speech_threshold), for a sandbox that
// echoes the effective parameters in request_params. The receiver is not modified and the copy
// shares no pointer that WithDefaults writes through.
func (r *LiveRequest) WithDefaults() LiveRequest {
	var out LiveRequest
	if r != nil {
		out = *r
	}
	s := out.Settings()
	out.Encoding = s.Encoding
	out.BitDepth = Int(s.BitDepth)
	out.SampleRate = Int(s.SampleRate)
	out.Channels = Int(s.Channels)
	out.Model = s.Model
	out.Endpointing = Float(s.Endpointing)
	out.MaximumDurationWithoutEndpointing = Float(s.MaximumDurationWithoutEndpointing)
	pre := PreProcessing{}
	if out.PreProcessing != nil {
		pre = *out.PreProcessing
	}
	pre.SpeechThreshold = Float(s.SpeechThreshold)
	out.PreProcessing = &pre
	return out
}
