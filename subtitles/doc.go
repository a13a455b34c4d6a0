// Package subtitles turns timed ASR words into subtitle cues and renders them.
//
// The pipeline is Segment (normalise the words, choose cue and line breaks by minimum cost,
// then time the cues), Check (measure every rule a style guide states, reporting violations
// and rates) and Render (SRT, WebVTT and every other format go-astisub writes).
//
// Rules and their sources are in notes/subtitle-rules.md; astisub's writer quirks that
// Render works around are in notes/go-libs.md §3. In short:
//
//   - Hard limits (characters per line counted in runes, lines per cue, maximum duration)
//     are never exceeded, except by a single word longer than a line, which Segment reports.
//   - Reading speed, minimum duration, bad line/cue break points, orphans, ignored
//     punctuation and ignored pauses are costs the segmentation minimises.
//   - Cues are sorted, end after they start, and are separated by at least
//     Profile.MinGapFrames frames; all times are whole milliseconds.
//
// Cue text is kept raw (unescaped); escaping is the renderer's job, per format.
package subtitles
