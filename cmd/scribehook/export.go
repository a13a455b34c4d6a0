package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/subtitles"
)

func newExportCmd() *cobra.Command {
	var (
		jobID, format, profileName, lang, out string
		check, crlf, bom                      bool
		maxChars, maxLines                    int
		maxCPS                                float64
	)
	cmd := &cobra.Command{
		Use:   "export --job ID --format srt|vtt|ttml|ssa|ass|stl",
		Short: "Render subtitles from a stored result, with style overrides",
		Long: `Renders subtitles from the result stored for a job (the transcript, or a translation with
--lang), with the profile of the configuration or --profile, the job's own subtitles_config, and
any override given here. --check prints the rule report (characters per line, lines, reading
speed, durations, gaps, overlaps, order, orphans, bad breaks) on stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := subtitles.ParseFormat(format)
			if err != nil {
				return err
			}
			if profileName != "" {
				// Refused before the store is opened; the configuration's own profile is valid.
				if _, err := subtitles.ProfileByName(profileName); err != nil {
					return err
				}
			}
			var rec store.JobRecord
			err = withStore(cmd, func(ctx context.Context, cfg configs.Config, st store.Store) error {
				if profileName == "" {
					profileName = cfg.Subtitles.Profile
				}
				if rec, err = st.GetJob(ctx, jobID); err != nil {
					return fmt.Errorf("job %s: %w", jobID, err)
				}
				return nil
			})
			if err != nil {
				return err
			}
			profile, err := subtitles.ProfileByName(profileName)
			if err != nil {
				return err
			}
			res, err := rec.Job.DecodeResult()
			if err != nil {
				return fmt.Errorf("job %s: stored result: %w", jobID, err)
			}
			if res == nil || res.Transcription == nil {
				return fmt.Errorf("job %s has no result to render (status %s)", jobID, rec.Job.Status)
			}
			profile = profile.ForJob(&rec.Job)
			fl := cmd.Flags()
			if fl.Changed("max-chars") {
				profile.MaxCharsPerLine = maxChars
			}
			if fl.Changed("max-lines") {
				profile.MaxLines = maxLines
			}
			if fl.Changed("max-cps") {
				profile.MaxCPS = maxCPS
			}
			if err := profile.Validate(); err != nil {
				return err
			}
			track, err := pickTrack(res, profile, lang)
			if err != nil {
				return fmt.Errorf("job %s: %w", jobID, err)
			}
			var buf bytes.Buffer
			if err := subtitles.Render(&buf, track.Cues, f, subtitles.Options{CRLF: crlf, BOM: bom, Title: jobID}); err != nil {
				return err
			}
			if check {
				writeReport(cmd.ErrOrStderr(), subtitles.Check(track.Cues, profile), track.Issues)
			}
			if out == "" || out == "-" {
				_, err = cmd.OutOrStdout().Write(buf.Bytes())
				return err
			}
			if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
				return fmt.Errorf("write %s: %w", out, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s (%d cues, %s)\n", out, len(track.Cues), f)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&jobID, "job", "", "job id (required)")
	fl.StringVar(&format, "format", "srt", "srt, vtt, ttml, ssa, ass or stl")
	fl.StringVar(&profileName, "profile", "", "netflix-adult, netflix-kids or bbc (default: the configuration's)")
	fl.StringVar(&lang, "lang", "", "language of the track: the transcript's, or a translation's")
	fl.StringVar(&out, "out", "", "output file (default: stdout)")
	fl.BoolVar(&check, "check", false, "print the rule report on stderr")
	fl.BoolVar(&crlf, "crlf", false, "CRLF line endings")
	fl.BoolVar(&bom, "bom", false, "start the file with a UTF-8 byte-order mark")
	fl.IntVar(&maxChars, "max-chars", 0, "override: characters per line")
	fl.IntVar(&maxLines, "max-lines", 0, "override: lines per cue")
	fl.Float64Var(&maxCPS, "max-cps", 0, "override: reading speed, characters per second")
	_ = cmd.MarkFlagRequired("job")
	return cmd
}

// pickTrack is the transcript, or the track of lang.
func pickTrack(r *api.Result, p subtitles.Profile, lang string) (subtitles.Track, error) {
	tracks, err := subtitles.FromResult(r, p)
	if err != nil {
		return subtitles.Track{}, err
	}
	if len(tracks) == 0 {
		return subtitles.Track{}, errors.New("the result has no transcript")
	}
	if lang == "" {
		return tracks[0], nil
	}
	var have []string
	for _, t := range tracks {
		if t.Language == lang {
			return t, nil
		}
		have = append(have, t.Language)
	}
	return subtitles.Track{}, fmt.Errorf("no track in language %q (tracks: %s)", lang, strings.Join(have, ", "))
}

func writeReport(w io.Writer, r subtitles.Report, issues []subtitles.Violation) {
	fmt.Fprintf(w, "%d cues, %d lines, mean %.1f characters/s\n", r.Cues, r.Lines, r.MeanCPS)
	rt := r.Rates
	fmt.Fprintf(w, "rates: cpl %.1f%%  lines %.1f%%  cps %.1f%%  duration %.1f%%  gap %.1f%%  overlap %.1f%%  order %.1f%%  orphans %.1f%%  bad breaks %.1f%%\n",
		100*rt.CPL, 100*rt.Lines, 100*rt.CPS, 100*rt.Duration, 100*rt.Gap, 100*rt.Overlap, 100*rt.Order, 100*rt.Orphans, 100*rt.BadBreaks)
	for _, v := range r.Violations {
		fmt.Fprintln(w, "  "+v.String())
	}
	for _, v := range issues {
		fmt.Fprintln(w, "  unavoidable: "+v.String())
	}
	if len(r.Violations) == 0 {
		fmt.Fprintln(w, "no violations")
	}
}
