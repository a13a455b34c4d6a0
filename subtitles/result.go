package subtitles

import (
	"fmt"

	"github.com/scribehook/scribehook/api"
)

// Track is one subtitle set: the transcription, or one translation.
type Track struct {
	Language    string // "" when the result does not say
	Translation bool
	Cues        []Cue
	Issues      []Violation // violations Segment could not avoid
}

// FromResult segments a job result: the transcription first, then one track per successful
// translation result, in the order of the result (translation entries with an error or no
// utterances are skipped). Translations usually carry utterances without words; their text
// is spread over each utterance's time span.
func FromResult(r *api.Result, p Profile) ([]Track, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("subtitles: from result: %w", err)
	}
	if r == nil || r.Transcription == nil {
		return nil, nil
	}
	tr := r.Transcription
	tracks := make([]Track, 0, 1)
	lang := firstLanguage(tr.Languages, tr.Utterances)
	cues, issues, err := segmentLang(tr.Utterances, p, lang)
	if err != nil {
		return nil, fmt.Errorf("subtitles: transcription: %w", err)
	}
	tracks = append(tracks, Track{Language: lang, Cues: cues, Issues: issues})
	if r.Translation == nil {
		return tracks, nil
	}
	for i, t := range r.Translation.Results {
		if t.Error != nil || len(t.Utterances) == 0 {
			continue
		}
		lang := firstLanguage(t.Languages, t.Utterances)
		cues, issues, err := segmentLang(t.Utterances, p, lang)
		if err != nil {
			return nil, fmt.Errorf("subtitles: translation %d (%s): %w", i, lang, err)
		}
		tracks = append(tracks, Track{Language: lang, Translation: true, Cues: cues, Issues: issues})
	}
	return tracks, nil
}

func firstLanguage(langs []string, utts []api.Utterance) string {
	for _, l := range langs {
		if l != "" {
			return l
		}
	}
	for _, u := range utts {
		if u.Language != "" {
			return u.Language
		}
	}
	return ""
}
