package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/atomicfile"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/subtitles"
)

// SubtitleRendering says how the pipeline renders subtitles when a job succeeds.
type SubtitleRendering struct {
	// Dir is where artifacts are written, as <Dir>/<job_id>/<name>, <job_id> being
	// sinks.PathSegment of the id. Empty: no subtitles.
	Dir string
	// Profile is the style profile; a job's own subtitles_config overrides its numbers.
	Profile subtitles.Profile
	// Formats are rendered for every job, plus those the job's subtitles_config asks for.
	Formats []subtitles.Format
	Options subtitles.Options
}

// renderedSubtitles is what rendering a job produced: the files on disk, their artifact rows,
// and the data of the subtitles.ready event.
type renderedSubtitles struct {
	artifacts []store.Artifact
	event     sinks.SubtitlesReadyData
	// stored are the names stored for the job (store.SpeakerNaming) that the rendering used: the
	// pipeline's transaction checks they are still the job's (a naming committed meanwhile
	// renders again).
	stored api.SpeakerNames
}

// subtitleNames are the names a rendering of job shows: those of its custom_metadata
// (api.SpeakersMetadataKey), with stored ones on top. Metadata names that break the rules are
// left out, and logged by the caller.
func subtitleNames(job *api.Job, stored api.SpeakerNames) (api.SpeakerNames, error) {
	meta, err := api.SpeakerNamesFromMetadata(job.CustomMetadata)
	return meta.Merge(stored), err
}

// renderSubtitles renders every track of a finished job (the transcript, and one per
// translation) in the configured formats plus the job's own, and keeps the service's own
// subtitles too. Files are written atomically and their content is a function of the result
// alone, so rendering the same job again (a retry after a crash) rewrites identical files.
// It runs before the store transaction: rendering never holds the writer. now stamps the
// artifacts' creation. names are shown for the speakers they name (Profile.WithSpeakerNames);
// revision numbers the rendering in the subtitles.ready event (1 the first, one more per naming).
func renderSubtitles(cfg SubtitleRendering, job *api.Job, names api.SpeakerNames, revision int64, now time.Time) (*renderedSubtitles, error) {
	if cfg.Dir == "" || len(job.Result) == 0 {
		return nil, nil
	}
	result, err := subtitleView(job.Result)
	if err != nil {
		return nil, fmt.Errorf("subtitles of job %s: decode result: %w", job.ID, err)
	}
	if result == nil || result.Transcription == nil {
		return nil, nil
	}
	profile := cfg.Profile
	formats := append([]subtitles.Format(nil), cfg.Formats...)
	if params, err := job.PreRecordedParams(); err == nil && params != nil && params.SubtitlesConfig != nil {
		profile = profile.WithConfig(params.SubtitlesConfig)
		for _, name := range params.SubtitlesConfig.EffectiveFormats() {
			if f, err := subtitles.ParseFormat(name); err == nil && !slices.Contains(formats, f) {
				formats = append(formats, f)
			}
		}
	}
	tracks, err := subtitles.FromResult(result, profile.WithSpeakerNames(names))
	if err != nil {
		return nil, fmt.Errorf("subtitles of job %s: %w", job.ID, err)
	}
	out := &renderedSubtitles{event: sinks.SubtitlesReadyData{JobID: job.ID, Revision: revision}}
	now = now.UTC()
	add := func(name, format, lang string, content []byte) error {
		path := filepath.Join(cfg.Dir, sinks.PathSegment(job.ID), name)
		if err := writeArtifact(path, content); err != nil {
			return err
		}
		out.artifacts = append(out.artifacts, store.Artifact{
			JobID: job.ID, Name: name, Format: format, Language: lang, Path: path,
			Size: int64(len(content)), CreatedAt: now,
		})
		out.event.Files = append(out.event.Files, sinks.SubtitleFile{Format: format, Language: lang, Name: name, Content: string(content)})
		return nil
	}
	for _, tr := range tracks {
		if len(tr.Cues) == 0 {
			continue
		}
		for _, f := range formats {
			var buf bytes.Buffer
			if err := subtitles.Render(&buf, tr.Cues, f, cfg.Options); err != nil {
				return nil, fmt.Errorf("render %s of job %s: %w", f, job.ID, err)
			}
			if err := add(artifactName("subtitles", tr.Language, f.Extension()), string(f), tr.Language, buf.Bytes()); err != nil {
				return nil, err
			}
		}
	}
	// The service's own rendering is kept beside ours: users compare, and some want exactly it.
	lang := ""
	if langs := result.Transcription.Languages; len(langs) > 0 {
		lang = langs[0]
	}
	for _, s := range result.Transcription.Subtitles {
		format := strings.ToLower(s.Format)
		if format == "" || strings.ContainsAny(format, `/\.`) {
			continue
		}
		if err := add(artifactName("service", lang, "."+sinks.PathSegment(format)), format, lang, []byte(s.Subtitles)); err != nil {
			return nil, err
		}
	}
	if len(out.artifacts) == 0 {
		return nil, nil
	}
	return out, nil
}

// artifactName is base[.lang]ext, e.g. subtitles.en.srt. The language goes through the same
// one-to-one mapping as the job id, so two tracks never share a file.
func artifactName(base, lang, ext string) string {
	if lang != "" {
		return base + "." + sinks.PathSegment(lang) + ext
	}
	return base + ext
}

// writeArtifact writes an artifact whole, its directory created (and synced) if missing.
func writeArtifact(path string, content []byte) error {
	if err := atomicfile.MkdirAll(filepath.Dir(path)); err != nil {
		return fmt.Errorf("create artifact directory: %w", err)
	}
	if err := atomicfile.WriteFile(path, content); err != nil {
		return fmt.Errorf("write artifact: %w", err)
	}
	return nil
}

// subtitleView decodes of a raw result what subtitles are made of: the transcription's
// languages, utterances (with their words) and the service's own subtitles, and the
// translations. The rest (the full transcript, the add-ons) is skipped, not decoded.
func subtitleView(raw json.RawMessage) (*api.Result, error) {
	var v struct {
		Transcription *struct {
			Languages  []string        `json:"languages"`
			Utterances []api.Utterance `json:"utterances"`
			Subtitles  []api.Subtitle  `json:"subtitles"`
		} `json:"transcription"`
		Translation *api.Addon[[]api.TranslationResult] `json:"translation"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	r := &api.Result{Translation: v.Translation}
	if t := v.Transcription; t != nil {
		r.Transcription = &api.Transcription{Languages: t.Languages, Utterances: t.Utterances, Subtitles: t.Subtitles}
	}
	return r, nil
}
