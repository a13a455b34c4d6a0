package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/termtext"
	"github.com/scribehook/scribehook/store"
)

func newSpeakersCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "speakers",
		Short: "Name a job's diarized speakers, and show their names",
	}
	cmd.AddCommand(newSpeakersSetCmd(), newSpeakersGetCmd())
	return cmd
}

func newSpeakersSetCmd() *cobra.Command {
	var output outputFlag
	cmd := &cobra.Command{
		Use:   `set JOB_ID N=NAME… | set JOB_ID --clear`,
		Short: "Name a job's speakers and render its subtitles again with the names",
		Long: `Stores the names of a job's (or live session's) diarized speakers, numbered as the
transcript numbers them from 0 (set JOB_ID 0="Alice Martin" 1="Bob Stone"), replacing the names
given before; --clear removes them. When the job has a result and subtitles are configured, they
are rendered again with the names (a label at each turn, WebVTT voice spans) and a
subtitles.ready event of the next revision is queued for the sinks, which a running serve
delivers at its next poll. The same names again change nothing.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			clear, _ := cmd.Flags().GetBool("clear")
			names, err := speakerArgs(args[1:], clear)
			if err != nil {
				return err
			}
			return withStore(cmd, func(ctx context.Context, cfg configs.Config, st store.Store) error {
				res, err := scribehook.SetSpeakers(ctx, st, cfg, args[0], names, time.Now())
				if errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("job %s: not found in the store", termtext.Line(args[0]))
				}
				if err != nil {
					return err
				}
				return output.print(cmd.OutOrStdout(), res, func(w io.Writer) error { return writeSpeakersSet(w, res) })
			})
		},
	}
	cmd.Flags().Bool("clear", false, "remove every name")
	output.register(cmd, outputTable)
	return cmd
}

func newSpeakersGetCmd() *cobra.Command {
	var output outputFlag
	cmd := &cobra.Command{
		Use:   "get JOB_ID",
		Short: "Show the names of a job's speakers and the revision of its subtitles",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, func(ctx context.Context, _ configs.Config, st store.Store) error {
				rec, err := st.GetJob(ctx, args[0])
				if errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("job %s: not found in the store", termtext.Line(args[0]))
				}
				if err != nil {
					return err
				}
				sp := store.Speakers{JobID: args[0]}
				if n, ok := st.(store.SpeakerNaming); ok {
					if sp, err = n.Speakers(ctx, args[0]); err != nil {
						return err
					}
				}
				meta, _ := api.SpeakerNamesFromMetadata(rec.Job.CustomMetadata)
				res := scribehook.SpeakersResult{JobID: args[0], Names: meta.Merge(sp.Names), Revision: sp.Revision}
				if res.Names == nil {
					res.Names = api.SpeakerNames{}
				}
				return output.print(cmd.OutOrStdout(), res, func(w io.Writer) error { return writeSpeakerNames(w, res.Names) })
			})
		},
	}
	output.register(cmd, outputTable)
	return cmd
}

// speakerArgs reads N=NAME arguments (the shell has taken the quotes off a name).
func speakerArgs(args []string, clear bool) (api.SpeakerNames, error) {
	switch {
	case clear && len(args) > 0:
		return nil, errors.New("--clear takes no names")
	case !clear && len(args) == 0:
		return nil, errors.New(`give names as N=NAME (0="Alice Martin"), or --clear`)
	}
	names := api.SpeakerNames{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		n, err := strconv.Atoi(k)
		if !ok || err != nil || strconv.Itoa(n) != k {
			return nil, fmt.Errorf("%q: must be N=NAME, N a speaker number (0, 1, …)", termtext.Line(a))
		}
		if _, dup := names[n]; dup {
			return nil, fmt.Errorf("speaker %d: named twice", n)
		}
		names[n] = strings.TrimSpace(v)
	}
	if err := names.Validate(); err != nil {
		return nil, err
	}
	return names, nil
}

func writeSpeakersSet(w io.Writer, r scribehook.SpeakersResult) error {
	if err := writeSpeakerNames(w, r.Names); err != nil {
		return err
	}
	var err error
	switch {
	case !r.Changed:
		_, err = fmt.Fprintf(w, "unchanged: the speakers already had these names (subtitles revision %d)\n", r.Revision)
	case r.EventID == "":
		_, err = fmt.Fprintln(w, "stored; no subtitles rendered (no result yet, or no subtitles configured): the result's will show them")
	default:
		_, err = fmt.Fprintf(w, "subtitles rendered again: revision %d, %s; subtitles.ready %s queued\n", r.Revision, strings.Join(r.Files, ", "), r.EventID)
	}
	return err
}

func writeSpeakerNames(w io.Writer, names api.SpeakerNames) error {
	if len(names) == 0 {
		_, err := fmt.Fprintln(w, "no names")
		return err
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		if _, err := fmt.Fprintf(w, "%d\t%s\n", n, termtext.Line(names[n])); err != nil {
			return err
		}
	}
	return nil
}
