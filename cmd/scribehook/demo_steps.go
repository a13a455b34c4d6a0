package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/asticode/go-astisub"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/sandbox/engine"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/subtitles"
)

// The pre-recorded part of the demo: a job submitted the way `submit` does it, the wait for
// serve to store its callback, and the subtitles serve rendered, copied and checked.

// preRecorded submits the sample as a pre-recorded job, as `submit` does, and waits until serve
// has stored its final callback. It returns the job's id as soon as it has one.
func (w *demoWorld) preRecorded(ctx context.Context) (string, store.JobRecord, error) {
	say, cfg := w.say, w.cfg
	say("\n1. pre-recorded job for the sample recording (%.1f s)", w.sampleSeconds)
	if w.eng.Name() == engine.ScriptedName {
		say("   (the scripted engine returns the words of the sample's script, demodata/sample.wav.json, at their real times)")
	}
	req := api.PreRecordedRequest{
		AudioURL:        w.filesURL + "/sample.wav",
		LanguageConfig:  &api.LanguageConfig{Languages: []string{"en"}},
		Subtitles:       api.Bool(true),
		SubtitlesConfig: &api.SubtitlesConfig{Formats: cfg.Subtitles.Formats},
		Sentences:       api.Bool(true),
		Summarization:   api.Bool(true),
		CustomMetadata:  json.RawMessage(`{"source":"scribehook demo"}`),
	}
	req.CustomVocabulary = &api.CustomVocabulary{Enabled: true}
	req.CustomVocabularyConfig = &api.CustomVocabularyConfig{Vocabulary: demoVocabularyTerms()}
	warn := func(format string, args ...any) { say("   warning: "+format, args...) }
	jobID, err := submitJob(ctx, cfg, w.st, w.client, &req, http.MethodPost, warn)
	if err != nil {
		return "", store.JobRecord{}, fmt.Errorf("submit the job: %w", err)
	}
	say("   job %s created; its callback goes to serve at %s/v1/callbacks/<token>", jobID, cfg.PublicURL)
	say("   waiting for serve to process the callback (reading the local store; the service is never polled)…")
	rec, waited, err := demoWaitJob(ctx, w.st, jobID, demoJobTimeout, say)
	if err != nil {
		return jobID, rec, err
	}
	if rec.Job.Status != api.StatusDone {
		return jobID, rec, jobFailed(rec)
	}
	res, err := rec.Job.DecodeResult()
	if err != nil {
		return jobID, rec, fmt.Errorf("job %s: stored result: %w", jobID, err)
	}
	if res == nil || res.Transcription == nil {
		return jobID, rec, fmt.Errorf("job %s is done but its stored record has no transcription", jobID)
	}
	tr := res.Transcription
	var audioSeconds float64
	if md := res.Metadata; md != nil {
		audioSeconds = md.AudioDuration
	}
	say("   callback processed after %s: job done, %.1f s of audio, %d utterances", seconds(waited), audioSeconds, len(tr.Utterances))
	for _, u := range tr.Utterances {
		say("   [%6.2f–%6.2f] %s", u.Start, u.End, u.Text)
	}
	if s := res.Summarization; s != nil && s.Success && s.Results != "" {
		say("   summary: %s", s.Results)
	}
	return jobID, rec, nil
}

// checkSubtitles copies the subtitles serve rendered for the job and checks them with the
// job's profile, as serve rendered them. It returns the job's artifacts.
func (w *demoWorld) checkSubtitles(ctx context.Context, rec store.JobRecord) ([]store.Artifact, error) {
	w.say("\n2. subtitles rendered by serve (%s)", w.cfg.Subtitles.Profile)
	arts, err := w.st.Artifacts(ctx, rec.Job.ID)
	if err != nil {
		return nil, fmt.Errorf("read the artifacts of job %s: %w", rec.Job.ID, err)
	}
	profile, err := subtitles.ProfileByName(w.cfg.Subtitles.Profile)
	if err != nil {
		return nil, err
	}
	profile = profile.ForJob(&rec.Job) // as serve rendered them
	verdict, err := exportAndCheck(arts, profile, w.p, w.say)
	w.say("   check: %s", verdict)
	return arts, err
}

// demoWaitJob reads the local store until serve has processed the job's final callback. Like
// `submit --wait`, it never asks the service; it says every few seconds that it still waits.
func demoWaitJob(ctx context.Context, st store.Store, id string, timeout time.Duration, say func(string, ...any)) (store.JobRecord, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	const remindEvery = 5 * time.Second
	nextReminder := remindEvery
	rec, err := scribehook.WaitJob(ctx, st, id, demoPollEvery, func(status api.JobStatus) {
		if elapsed := time.Since(start); elapsed >= nextReminder {
			nextReminder += remindEvery
			if status == "" {
				status = "not stored yet"
			}
			say("   … still waiting after %s (local status: %s)", elapsed.Round(time.Second), status)
		}
	})
	switch {
	case err == nil:
		return rec, time.Since(start), nil
	case ctx.Err() != nil:
		return store.JobRecord{}, 0, fmt.Errorf("serve did not store the final callback of %s within %s: %w", id, timeout, ctx.Err())
	}
	return store.JobRecord{}, 0, err
}

// exportAndCheck copies the SRT and WebVTT serve rendered for the job's transcript to the top
// of the output directory and runs the subtitle checker on the files as written: format
// validation, then the rules of the profile on the cues read back. It returns the one-line
// verdict, and an error when either file fails.
func exportAndCheck(arts []store.Artifact, profile subtitles.Profile, p demoPaths, say func(string, ...any)) (string, error) {
	type target struct {
		format   subtitles.Format
		copyTo   string
		validate func([]byte) error
		read     func(io.Reader) (*astisub.Subtitles, error)
	}
	targets := []target{
		{subtitles.SRT, p.srt, subtitles.ValidateSRT, astisub.ReadFromSRT},
		{subtitles.VTT, p.vtt, subtitles.ValidateVTT, astisub.ReadFromWebVTT},
	}
	var problems []string
	var cues, soft int
	var softRules []string
	var meanCPS float64
	for _, t := range targets {
		a, ok := transcriptArtifact(arts, t.format)
		if !ok {
			return "FAIL: serve rendered no " + string(t.format), fmt.Errorf("serve rendered no %s for the job (artifacts: %s)", t.format, strings.Join(artifactNames(arts), ", "))
		}
		b, err := os.ReadFile(a.Path)
		if err != nil {
			return "FAIL: artifact unreadable", fmt.Errorf("read artifact %s: %w", a.Path, err)
		}
		if err := os.WriteFile(t.copyTo, b, 0o644); err != nil {
			return "FAIL: could not write the copy", fmt.Errorf("write %s: %w", t.copyTo, err)
		}
		say("   %s  (serve's artifact %s)", t.copyTo, a.Path)
		if err := t.validate(b); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", filepath.Base(t.copyTo), err))
			continue
		}
		parsed, err := readCues(t.read, b)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", filepath.Base(t.copyTo), err))
			continue
		}
		r := subtitles.Check(parsed, profile)
		for _, v := range r.Hard() {
			problems = append(problems, fmt.Sprintf("%s: %s", filepath.Base(t.copyTo), v))
		}
		if t.format == subtitles.SRT {
			cues, meanCPS = r.Cues, r.MeanCPS
			for _, v := range r.Violations {
				if !v.Hard {
					soft++
					if !slices.Contains(softRules, v.Rule) {
						softRules = append(softRules, v.Rule)
					}
				}
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Sprintf("FAIL: %d problems", len(problems)), fmt.Errorf("the subtitles fail the checker: %s", strings.Join(problems, "; "))
	}
	verdict := fmt.Sprintf("PASS: SRT and WebVTT well-formed; %d cues, no hard-rule violation of %s, %d soft", cues, profile.Name, soft)
	if soft > 0 {
		verdict += " (" + strings.Join(softRules, ", ") + ")"
	}
	return verdict + fmt.Sprintf("; mean %.1f characters/s", meanCPS), nil
}

// transcriptArtifact is serve's own rendering of the transcript track (subtitles.<lang>.<ext>)
// in format f: not the service's copy (service.…) nor a translation, which the demo does not
// ask for.
func transcriptArtifact(arts []store.Artifact, f subtitles.Format) (store.Artifact, bool) {
	for _, a := range arts {
		if a.Format == string(f) && strings.HasPrefix(a.Name, "subtitles.") {
			return a, true
		}
	}
	return store.Artifact{}, false
}

func artifactNames(arts []store.Artifact) []string {
	names := make([]string, 0, len(arts))
	for _, a := range arts {
		names = append(names, a.Name)
	}
	return names
}

// readCues reads a subtitle file back into cues, the checker's input: times and the lines as
// displayed. astisub's readers are known to panic on some malformed files; the file was
// validated first, but a panic must still be a failed check, not a crashed demo.
func readCues(read func(io.Reader) (*astisub.Subtitles, error), b []byte) (cues []subtitles.Cue, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unreadable: %v", r)
		}
	}()
	s, err := read(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("unreadable: %w", err)
	}
	for _, it := range s.Items {
		c := subtitles.Cue{Start: it.StartAt, End: it.EndAt}
		for _, l := range it.Lines {
			c.Lines = append(c.Lines, l.String())
		}
		cues = append(cues, c)
	}
	return cues, nil
}

// demoDrainSinks waits until the sinks' queues are empty. Every event is queued in the
// transaction that applied its delivery, so once the job and the session are final in the
// store, an empty queue means every event of the run was written.
func demoDrainSinks(ctx context.Context, st store.Store, names []string) error {
	ctx, cancel := context.WithTimeout(ctx, demoDrainTimeout)
	defer cancel()
	tick := time.NewTicker(demoPollEvery)
	defer tick.Stop()
	for {
		var left []string
		for _, name := range names {
			n, err := st.SinkDepth(ctx, name)
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				return fmt.Errorf("read the queue of sink %s: %w", name, err)
			}
			if n > 0 {
				left = append(left, fmt.Sprintf("%s: %d", name, n))
			}
		}
		if len(left) == 0 && ctx.Err() == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the sinks still have events queued after %s (%s): %w", demoDrainTimeout, strings.Join(left, ", "), ctx.Err())
		case <-tick.C:
		}
	}
}

// countLinesFrom counts the lines of a file after offset.
func countLinesFrom(path string, offset int64) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20) // an event with a long transcript is one line
	n := 0
	for sc.Scan() {
		n++
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return n, nil
}
