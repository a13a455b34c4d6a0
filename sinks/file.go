package sinks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/atomicfile"
)

// The file sink's layout, per job or live session:
//
//	<dir>/<job_id>/events/<created>-<type>-<event id>.json   every event, indented
//	<dir>/<job_id>/transcript.txt                             job.succeeded with a transcript
//	<dir>/<job_id>/<name>                                     each file of subtitles.ready
//
// <job_id> is PathSegment of the id, as in the pipeline's artifact directory.
// <created> is the event's created_at as 20060102T150405.000Z, so that a listing sorts in
// time order. Every file is written whole (temporary file, fsync, rename, fsync of the
// directory), so a reader sees the old content or the new, never a part; the names and
// contents depend only on the event, so a delivery written twice gives the same files.
// Artifacts are written before the event file, so an event file announces files that exist.

const (
	eventsDir      = "events"
	transcriptName = "transcript.txt"
	createdLayout  = "20060102T150405.000Z"
)

// SubtitlesReadyData is the data of a subtitles.ready event: the rendered files of a job.
type SubtitlesReadyData struct {
	JobID string `json:"job_id"`
	// Revision numbers the renderings of the job's subtitles: 1 the first (the result applied),
	// one more each time naming its speakers renders them again (PUT /v1/jobs/{id}/speakers).
	// Each revision's event has an id of its own; the files keep their names.
	Revision int64          `json:"revision"`
	Files    []SubtitleFile `json:"files"`
}

// SubtitleFile is one rendered subtitle file.
type SubtitleFile struct {
	Format   string `json:"format"`   // srt, vtt…
	Language string `json:"language"` // the transcript's language or a translation's
	Name     string `json:"name"`     // a plain file name, e.g. "subtitles.en.srt"
	Content  string `json:"content"`
}

// FileSink writes events and their artifacts under a directory.
type FileSink struct {
	name string
	dir  string
	log  logrus.FieldLogger
}

// NewFile builds a file sink from spec (kind file). The directory is created when missing.
func NewFile(spec Spec, deps Deps) (*FileSink, error) {
	deps = deps.WithDefaults()
	if spec.Dir == "" {
		return nil, required(spec, "Dir", KindFile, "")
	}
	dir, err := filepath.Abs(spec.Dir)
	if err != nil {
		return nil, specErr(spec, "Dir", err)
	}
	if err := atomicfile.MkdirAll(dir); err != nil {
		return nil, specErr(spec, "Dir", err)
	}
	return &FileSink{name: spec.Name, dir: dir, log: deps.Logger.WithField("sink", spec.Name)}, nil
}

// Name implements Sink.
func (s *FileSink) Name() string { return s.name }

// Close implements Sink; no file stays open between deliveries.
func (s *FileSink) Close() error { return nil }

// Deliver writes ev's files. Events that can never be written (no job id, data that does not
// decode) fail permanently; disk errors are retried.
func (s *FileSink) Deliver(ctx context.Context, ev api.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	files, err := s.prepare(ev)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := atomicfile.WriteFileFunc(f.name, f.write); err != nil {
			return err
		}
	}
	s.written(ev, len(files))
	return nil
}

// DeliverBatch implements BatchSink: it writes the files of every event as Deliver does, each
// atomic, but makes them durable together (atomicfile.Batch: two syncs for the batch instead of
// two per file). An event's error is its own: a permanent failure or a file that cannot be
// written fails that event only; a failed sync fails them all.
func (s *FileSink) DeliverBatch(ctx context.Context, evs []api.Event) []error {
	if err := ctx.Err(); err != nil {
		return sameErrors(len(evs), err)
	}
	errs := make([]error, len(evs))
	var b atomicfile.Batch
	counts := make([]int, len(evs))
	for i, ev := range evs {
		files, err := s.prepare(ev)
		if err != nil {
			errs[i] = err
			continue
		}
		for _, f := range files {
			if err := b.AddFunc(i, f.name, f.write); err != nil {
				errs[i] = err
				b.Drop(i)
				break
			}
		}
		counts[i] = len(files)
	}
	for i, err := range b.Commit() {
		errs[i] = err
	}
	for i, ev := range evs {
		if errs[i] == nil {
			s.written(ev, counts[i])
		}
	}
	return errs
}

// prepare checks ev, encodes its files and creates their directories: the artifacts, then the
// event file (so that an event file announces files that exist), each named by its full path.
func (s *FileSink) prepare(ev api.Event) ([]artifact, error) {
	if ev.JobID == "" {
		return nil, &Failure{Err: errors.New("event has no job id to name its folder"), Permanent: true}
	}
	if ev.ID == "" {
		return nil, &Failure{Err: errors.New("event has no id to name its file"), Permanent: true}
	}
	jobDir := filepath.Join(s.dir, PathSegment(ev.JobID))

	var files []artifact
	switch ev.Type {
	case api.EventJobSucceeded:
		text, err := TranscriptText(ev.Data)
		if err != nil {
			return nil, &Failure{Err: fmt.Errorf("job.succeeded data: %w", err), Permanent: true}
		}
		if text != "" {
			files = append(files, contentArtifact(transcriptName, []byte(text)))
		}
	case api.EventSubtitlesReady:
		subs, err := subtitleArtifacts(ev)
		if err != nil {
			return nil, &Failure{Err: err, Permanent: true}
		}
		files = append(files, subs...)
	}
	for i := range files {
		files[i].name = filepath.Join(jobDir, files[i].name)
	}

	body, err := bodyOf(ev)
	if err != nil {
		return nil, &Failure{Err: fmt.Errorf("encode event: %w", err), Permanent: true}
	}
	if err := atomicfile.MkdirAll(filepath.Join(jobDir, eventsDir)); err != nil {
		return nil, err
	}
	event := artifact{filepath.Join(jobDir, eventsDir, EventFileName(ev)), func(w io.Writer) error { return writeIndented(w, body...) }}
	return append(files, event), nil
}

func (s *FileSink) written(ev api.Event, files int) {
	if !debugEnabled(s.log) {
		return
	}
	s.log.WithFields(logrus.Fields{"job_id": ev.JobID, "event_id": ev.ID, "files": files}).Debug("event written")
}

// artifact is a file to write: its name (a full path once prepared) and how to write it.
type artifact struct {
	name  string
	write func(io.Writer) error
}

func contentArtifact(name string, content []byte) artifact {
	return artifact{name, func(w io.Writer) error {
		_, err := w.Write(content)
		return err
	}}
}

// EventFileName is the name of ev's file under <dir>/<job_id>/events.
func EventFileName(ev api.Event) string {
	return ev.CreatedAt.UTC().Format(createdLayout) + "-" + safeNamePart(ev.Type) + "-" + safeNamePart(ev.ID) + ".json"
}

func subtitleArtifacts(ev api.Event) ([]artifact, error) {
	var data SubtitlesReadyData
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		return nil, fmt.Errorf("subtitles.ready data: %w", err)
	}
	if data.JobID != "" && data.JobID != ev.JobID {
		return nil, fmt.Errorf("subtitles.ready data: job_id %q differs from the event's %q", data.JobID, ev.JobID)
	}
	seen := map[string]bool{}
	var out []artifact
	for i, f := range data.Files {
		if err := checkFileName(fmt.Sprintf("files[%d].name", i), f.Name); err != nil {
			return nil, fmt.Errorf("subtitles.ready data: %w", err)
		}
		if f.Name == eventsDir || f.Name == transcriptName {
			return nil, fmt.Errorf("subtitles.ready data: files[%d].name %q is reserved by the file sink", i, f.Name)
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("subtitles.ready data: files[%d].name %q appears twice", i, f.Name)
		}
		seen[f.Name] = true
		out = append(out, contentArtifact(f.Name, []byte(f.Content)))
	}
	return out, nil
}

// checkFileName refuses names that would leave their directory or hide: the job id and the
// subtitle names come from outside.
func checkFileName(field, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s is empty", field)
	case name == "." || name == "..":
		return fmt.Errorf("%s %q is not a file name", field, name)
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("%s %q starts with a dot", field, name)
	case strings.ContainsAny(name, "/\\\x00"):
		return fmt.Errorf("%s %q contains a path separator or NUL", field, name)
	case len(name) > 200:
		return fmt.Errorf("%s is longer than 200 bytes", field)
	}
	return nil
}

// Bounds of PathSegment: an encoded id longer than maxSegment is cut to segmentKeep bytes and
// followed by a hash of the whole id, which keeps the name under every file system's limit.
const (
	maxSegment  = 128
	segmentKeep = 60
)

// PathSegment is the name of the folder of a job or live session (and of a language code in an
// artifact's name) under the file sink's directory and the pipeline's artifact directory. Ids
// come from outside, so the name must stay one harmless path segment, and no two ids may share
// one: the pipeline and the file sink both call this, so that the same job lands in folders of
// the same name and two jobs never write into one folder.
//
// Letters, digits, '-' and '_' stay as they are, and so does '.' when it is neither first nor
// last (no ".", "..", hidden names, or names Windows would trim), so the usual ids keep their
// folders. Every other byte becomes %XX (upper-case hex), which is why a name never holds a '%'
// that is not such an escape, and decoding gives the id back. The empty id is "%". A name
// longer than 128 bytes keeps its first 60 bytes (never a cut escape) followed by "%~" and the
// SHA-256 of the whole id in hex: "%~" never occurs in an unhashed name, so the two kinds of
// names never meet.
func PathSegment(id string) string {
	if id == "" {
		return "%"
	}
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		plain := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' ||
			c == '.' && i > 0 && i < len(id)-1
		if plain {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	name := b.String()
	if len(name) <= maxSegment {
		return name
	}
	keep := segmentKeep
	if i := strings.LastIndexByte(name[:keep], '%'); i >= keep-2 {
		keep = i // an escape cut in two would read as another byte
	}
	sum := sha256.Sum256([]byte(id))
	return name[:keep] + "%~" + hex.EncodeToString(sum[:])
}

// safeNamePart keeps letters, digits, '.', '_' and '-', and writes '_' for anything else.
func safeNamePart(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 100 {
		b = b[:100]
	}
	return string(b)
}

// TranscriptText renders the data of a job.succeeded event (the job record; a bare result is
// accepted too) as readable lines, one per utterance in time order:
//
//	[00:00:01.2 → 00:00:03.4] Speaker 0: text
//
// The speaker number is the utterance's speaker field as the service gives it (0-based, as in
// its display mode), or its channel when there is none. Empty when there is no transcript.
//
// Of a job record with a result, only what is printed is decoded (transcriptJob): the
// utterances' times, channel, speaker and text, not their words nor the rest of the record,
// which for a 2-hour result is most of its megabytes. Data that does not decode that way is an
// error; other data (a bare result) is decoded as a whole.
func TranscriptText(data json.RawMessage) (string, error) {
	var job transcriptJob
	if err := json.Unmarshal(data, &job); err != nil {
		return "", err
	}
	if len(job.Result) == 0 || string(job.Result) == "null" {
		return bareTranscriptText(data), nil
	}
	var r transcriptResult
	if err := json.Unmarshal(job.Result, &r); err != nil {
		return "", err
	}
	if r.Transcription == nil {
		return "", nil
	}
	return renderTranscript(r.Transcription.Utterances), nil
}

// bareTranscriptText is TranscriptText of data that is not a job record with a result: a bare
// result, decoded as a whole (api.Result); empty when it is none.
func bareTranscriptText(data json.RawMessage) string {
	var r api.Result
	if json.Unmarshal(data, &r) != nil || r.Transcription == nil {
		return ""
	}
	utts := make([]transcriptUtterance, len(r.Transcription.Utterances))
	for i, u := range r.Transcription.Utterances {
		utts[i] = transcriptUtterance{Start: u.Start, End: u.End, Channel: u.Channel, Text: u.Text, Speaker: u.Speaker}
	}
	return renderTranscript(utts)
}

// transcriptJob is the part of a job record that TranscriptText prints; the names and types
// are the service's.
type transcriptJob struct {
	// Raw, then decoded: a record read as the kit reads it takes the last "result" member
	// whole, where decoding into a pointer would merge a later one into an earlier one.
	Result json.RawMessage `json:"result"`
}

type transcriptResult struct {
	Transcription *struct {
		Utterances []transcriptUtterance `json:"utterances"`
	} `json:"transcription"`
}

type transcriptUtterance struct {
	Start   float64 `json:"start"`
	End     float64 `json:"end"`
	Channel int     `json:"channel"`
	Text    string  `json:"text"`
	Speaker *int    `json:"speaker,omitempty"`
}

// renderTranscript writes the lines of TranscriptText; it sorts utts.
func renderTranscript(utts []transcriptUtterance) string {
	sort.SliceStable(utts, func(i, j int) bool {
		if utts[i].Start != utts[j].Start {
			return utts[i].Start < utts[j].Start
		}
		return utts[i].Channel < utts[j].Channel
	})
	var b strings.Builder
	for _, u := range utts {
		text := strings.Join(strings.Fields(u.Text), " ")
		if text == "" {
			continue
		}
		speaker := u.Channel
		if u.Speaker != nil {
			speaker = *u.Speaker
		}
		fmt.Fprintf(&b, "[%s → %s] Speaker %d: %s\n", transcriptClock(u.Start), transcriptClock(u.End), speaker, text)
	}
	return b.String()
}

// transcriptClock writes seconds as HH:MM:SS.d, rounded to the tenth.
func transcriptClock(sec float64) string {
	if math.IsNaN(sec) || sec < 0 {
		sec = 0
	}
	tenths := int64(math.Round(sec * 10))
	h := tenths / 36000
	m := tenths / 600 % 60
	s := tenths / 10 % 60
	return fmt.Sprintf("%02d:%02d:%02d.%d", h, m, s, tenths%10)
}
