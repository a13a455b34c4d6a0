package addons

import (
	"github.com/scribehook/scribehook/api"
)

// Names of the add-ons that need a model the sandbox does not have; they appear in the error
// message of their envelopes.
const (
	AddonTranslation              = "translation"
	AddonNamedEntityRecognition   = "named_entity_recognition"
	AddonSentimentAnalysis        = "sentiment_analysis"
	AddonModeration               = "moderation"
	AddonAudioToLLM               = "audio_to_llm"
	AddonStructuredDataExtraction = "structured_data_extraction"
	AddonSpeakerReidentification  = "speaker_reidentification"
)

// The error of an add-on that the sandbox cannot compute: 501 says "not implemented here",
// which a client can tell from a failure of the add-on itself (5xx of its own).
const (
	NotAvailableStatus    = 501
	NotAvailableException = "NotAvailableInSandbox"
)

// NotAvailableError is the error object of addon in the sandbox.
func NotAvailableError(addon string) *api.AddonError {
	return &api.AddonError{
		StatusCode: NotAvailableStatus,
		Exception:  NotAvailableException,
		Message:    addon + " needs a model the sandbox does not have",
	}
}

func failed[T any](status int, exception, message string, results T) api.Addon[T] {
	return api.Addon[T]{
		IsEmpty: true,
		Error:   &api.AddonError{StatusCode: status, Exception: exception, Message: message},
		Results: results,
	}
}

// NotAvailable is the failed envelope of addon, with results as its (empty) results.
func NotAvailable[T any](addon string, results T, opts Options) *api.Addon[T] {
	return timed(opts, func() api.Addon[T] {
		e := NotAvailableError(addon)
		return failed(e.StatusCode, e.Exception, e.Message, results)
	})
}

// TranslationNotAvailable is the failed translation envelope: one entry per target language of
// cfg, in its order, each with the same error, the target language and no utterances.
func TranslationNotAvailable(cfg *api.TranslationConfig, opts Options) *api.Addon[[]api.TranslationResult] {
	var targets []string
	if cfg != nil {
		targets = cfg.TargetLanguages
	}
	results := make([]api.TranslationResult, 0, len(targets))
	for _, lang := range targets {
		results = append(results, api.TranslationResult{
			Error:      NotAvailableError(AddonTranslation),
			Languages:  []string{lang},
			Utterances: []api.Utterance{},
		})
	}
	return NotAvailable(AddonTranslation, results, opts)
}

// AudioToLLMNotAvailable is the failed audio_to_llm envelope: one failed envelope per prompt of
// cfg, in its order, each naming its prompt with an empty response.
func AudioToLLMNotAvailable(cfg *api.AudioToLLMConfig, opts Options) *api.Addon[[]api.Addon[api.PromptResponse]] {
	var prompts []string
	if cfg != nil {
		prompts = cfg.Prompts
	}
	results := make([]api.Addon[api.PromptResponse], 0, len(prompts))
	for _, p := range prompts {
		results = append(results, *NotAvailable(AddonAudioToLLM, api.PromptResponse{Prompt: p}, opts))
	}
	return NotAvailable(AddonAudioToLLM, results, opts)
}

// EntityNotAvailable is the failed named_entity_recognition envelope. Its entities are in
// results, an empty list, as the service sends them (not in the interface's entity, see
// api.EntityAddon).
func EntityNotAvailable(opts Options) *api.EntityAddon {
	start := opts.now()
	e := NotAvailableError(AddonNamedEntityRecognition)
	return &api.EntityAddon{
		IsEmpty:  true,
		Error:    e,
		Results:  []api.NamedEntity{},
		ExecTime: opts.now().Sub(start).Seconds(),
	}
}
