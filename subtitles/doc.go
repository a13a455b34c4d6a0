// Package subtitles turns timed ASR words into subtitle cues, checks them against style-guide
// rules, and renders them.
//
//	p, _ := subtitles.ProfileByName("netflix-adult")   // or bbc, netflix-kids
//	p = p.WithConfig(req.SubtitlesConfig)              // a job's own limits, if any
//	tracks, _ := subtitles.FromResult(result, p)       // transcription + one track per translation
//	report := subtitles.Check(tracks[0].Cues, p)       // violations and rates
//	_ = subtitles.Render(w, tracks[0].Cues, subtitles.VTT, subtitles.Options{})
//
// Segment normalises the words (order, missing and overlapping times, text that would break
// a file), chooses cue and line breaks by minimum cost over break positions, then times the
// cues. The rules are a Profile's fields, each with its source (the presets of ProfileByName
// follow the Netflix and BBC style guides); the go-astisub quirks Render works around are
// commented where they are handled (render.go, escape.go). The guarantees:
//
//   - Hard limits (characters per line counted in runes, lines per cue, maximum duration) are
//     never exceeded, except by a single word longer than a line, which Segment reports. Such
//     a word gets a line of its own, with its neighbours' words on the other lines when the
//     profile has more than one, and its cue lasts at least the minimum duration all the same.
//   - Reading speed, minimum duration, bad line and cue breaks (after articles, prepositions,
//     conjunctions, subject pronouns), orphans, ignored punctuation and ignored pauses are
//     costs the segmentation minimises; a speaker change or a long pause ends a cue (or two
//     short turns share a cue with dashes).
//   - Cues are sorted, end after they start, are separated by at least Profile.MinGapFrames
//     frames, and all times are whole milliseconds.
//   - The same input always gives the same bytes.
//
// Cue text is kept raw (unescaped); escaping is the renderer's job, per format. ValidateSRT
// and ValidateVTT are strict checks of the files Render writes.
package subtitles
