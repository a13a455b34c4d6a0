package addons

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
)

// Options tunes how the add-ons run; the zero Options is what the sandbox serves.
type Options struct {
	// Now is the clock that measures exec_time; nil is time.Now. Tests pass a fixed clock to get
	// byte-stable results.
	Now func() time.Time
	// ChapterPause and ChapterSentences set chapter boundaries (see Chapterize); zero takes
	// DefaultChapterPause and DefaultChapterSentences.
	ChapterPause     float64
	ChapterSentences int
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// timed runs f and returns its envelope with exec_time set to f's duration in seconds.
func timed[T any](o Options, f func() api.Addon[T]) *api.Addon[T] {
	start := o.now()
	a := f()
	a.ExecTime = o.now().Sub(start).Seconds()
	return &a
}

// done is the envelope of an add-on that ran.
func done[T any](results T, empty bool) api.Addon[T] {
	return api.Addon[T]{Success: true, IsEmpty: empty, Results: results}
}

// Apply computes the add-ons that req switches on over the finished transcription t, the way the
// service fills a pre-recorded result. It returns a new result holding the transcription (a copy
// of t with custom spelling, diarization speakers, sentences and subtitles applied) and one
// envelope per add-on; metadata is left to the caller. t is not changed. Add-ons that need a
// model fail in their envelope (see NotAvailable) while the job itself is done.
//
// Custom spelling runs first, so that every other add-on sees the spelled words; diarization
// runs next, so that display mode and sentences carry the folded speakers. name_consistency is a
// successful no-op whose results are the full transcript: a transcript of one engine already
// writes each name one way. punctuation_enhanced has no envelope and is ignored.
//
// The only error is ctx's, when it ends before all add-ons have run.
func Apply(ctx context.Context, req *api.PreRecordedRequest, t *api.Transcription, opts Options) (*api.Result, error) {
	if req == nil {
		req = &api.PreRecordedRequest{}
	}
	tr := copyTranscription(t)
	res := &api.Result{Transcription: tr}
	steps := []struct {
		on  bool
		run func()
	}{
		{api.IsTrue(req.CustomSpelling), func() {
			tr = NewSpeller(req.CustomSpellingConfig).Transcription(tr)
			res.Transcription = tr
		}},
		{api.IsTrue(req.Diarization), func() {
			res.Diarization = DiarizationAddon(tr, req.DiarizationConfig, opts)
			tr.Utterances = copyUtterances(res.Diarization.Results)
		}},
		{api.IsTrue(req.Sentences), func() {
			res.Sentences = SentencesAddon(tr, opts)
			// The same envelope in both places, but its own list, so that neither aliases the other.
			inner := *res.Sentences
			inner.Results = append([]string{}, inner.Results...)
			tr.Sentences = []api.Addon[[]string]{inner}
		}},
		{api.IsTrue(req.Subtitles), func() { tr.Subtitles = Subtitles(tr, req.SubtitlesConfig) }},
		{api.IsTrue(req.DisplayMode), func() { res.DisplayMode = DisplayModeAddon(tr, opts) }},
		{api.IsTrue(req.Summarization), func() {
			res.Summarization = SummarizationAddon(tr, req.SummarizationConfig, opts)
		}},
		{api.IsTrue(req.Chapterization), func() { res.Chapterization = ChapterizationAddon(tr, opts) }},
		{api.IsTrue(req.NameConsistency), func() {
			res.NameConsistency = timed(opts, func() api.Addon[string] {
				return done(tr.FullTranscript, strings.TrimSpace(tr.FullTranscript) == "")
			})
		}},
		{api.IsTrue(req.Translation), func() {
			res.Translation = TranslationNotAvailable(req.TranslationConfig, opts)
		}},
		{api.IsTrue(req.NamedEntityRecognition), func() { res.NamedEntityRecognition = EntityNotAvailable(opts) }},
		{api.IsTrue(req.SentimentAnalysis), func() {
			res.SentimentAnalysis = NotAvailable[string](AddonSentimentAnalysis, "", opts)
		}},
		{api.IsTrue(req.Moderation), func() { res.Moderation = NotAvailable[string](AddonModeration, "", opts) }},
		{api.IsTrue(req.StructuredDataExtraction), func() {
			res.StructuredDataExtraction = NotAvailable[string](AddonStructuredDataExtraction, "", opts)
		}},
		{api.IsTrue(req.AudioToLLM), func() { res.AudioToLLM = AudioToLLMNotAvailable(req.AudioToLLMConfig, opts) }},
		{extraFlag(req.Extra, AddonSpeakerReidentification), func() {
			res.SpeakerReidentification = NotAvailable[string](AddonSpeakerReidentification, "", opts)
		}},
	}
	for _, s := range steps {
		if !s.on {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("apply add-ons: %w", err)
		}
		s.run()
	}
	return res, nil
}

// ApplyLive computes the add-ons of a finished live session over its transcription t: custom
// spelling of realtime processing, then summarization and chapterization of post-processing.
// Translation, named entity recognition and sentiment analysis of realtime processing need a
// model and fail in their envelopes. As for Apply, t is not changed and the only error is ctx's.
func ApplyLive(ctx context.Context, req *api.LiveRequest, t *api.Transcription, opts Options) (*api.Result, error) {
	var rt api.RealtimeProcessing
	var post api.PostProcessing
	if req != nil && req.RealtimeProcessing != nil {
		rt = *req.RealtimeProcessing
	}
	if req != nil && req.PostProcessing != nil {
		post = *req.PostProcessing
	}
	pre := &api.PreRecordedRequest{
		CustomSpelling:         rt.CustomSpelling,
		CustomSpellingConfig:   rt.CustomSpellingConfig,
		Translation:            rt.Translation,
		TranslationConfig:      rt.TranslationConfig,
		NamedEntityRecognition: rt.NamedEntityRecognition,
		SentimentAnalysis:      rt.SentimentAnalysis,
		Summarization:          post.Summarization,
		SummarizationConfig:    post.SummarizationConfig,
		Chapterization:         post.Chapterization,
	}
	res, err := Apply(ctx, pre, t, opts)
	if err != nil {
		return nil, fmt.Errorf("apply live add-ons: %w", err)
	}
	return res, nil
}

// SentencesAddon is the sentences envelope: SplitSentences' texts; empty for an empty transcript.
func SentencesAddon(t *api.Transcription, opts Options) *api.Addon[[]string] {
	return timed(opts, func() api.Addon[[]string] {
		texts := SentenceTexts(SplitSentences(t))
		return done(texts, len(texts) == 0)
	})
}

// DisplayModeAddon is the display_mode envelope (see DisplayMode).
func DisplayModeAddon(t *api.Transcription, opts Options) *api.Addon[[]string] {
	return timed(opts, func() api.Addon[[]string] {
		lines := DisplayMode(t)
		if lines == nil {
			lines = []string{}
		}
		return done(lines, len(lines) == 0)
	})
}

// DiarizationAddon is the diarization envelope (see Diarize).
func DiarizationAddon(t *api.Transcription, cfg *api.DiarizationConfig, opts Options) *api.Addon[[]api.Utterance] {
	return timed(opts, func() api.Addon[[]api.Utterance] {
		us := Diarize(t, cfg)
		return done(us, len(us) == 0)
	})
}

// SummarizationAddon is the summarization envelope (see Summarize), for pre-recorded jobs and
// live post-processing.
func SummarizationAddon(t *api.Transcription, cfg *api.SummarizationConfig, opts Options) *api.Addon[string] {
	return timed(opts, func() api.Addon[string] {
		s := Summarize(t, SummaryType(cfg))
		return done(s, s == "")
	})
}

// ChapterizationAddon is the chapterization envelope: its results are the object
// {"chapters": [...]} of Chapterize's chapters, the same chapters as the post_chapterization live
// message. The service's SDKs require an object there (the interface says "object" and leaves
// its inside open); docs/spec/provider-facts.md records the choice of the one member.
func ChapterizationAddon(t *api.Transcription, opts Options) *api.Addon[api.ChapterizationResults] {
	return timed(opts, func() api.Addon[api.ChapterizationResults] {
		chapters := Chapterize(t, opts.ChapterPause, opts.ChapterSentences)
		return done(api.ChapterizationResults{Chapters: chapters}, len(chapters) == 0)
	})
}

func copyUtterances(us []api.Utterance) []api.Utterance {
	out := make([]api.Utterance, len(us))
	for i, u := range us {
		out[i] = copyUtterance(u)
	}
	return out
}

// extraFlag reports whether an unknown request member name is the boolean true: the service
// returns speaker_reidentification although the interface has no flag for it.
func extraFlag(e api.Extra, name string) bool {
	var on bool
	return e[name] != nil && json.Unmarshal(e[name], &on) == nil && on
}
