package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/termtext"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/submitter"
)

func newSubmitCmd() *cobra.Command {
	var (
		jf      jobFlags
		method  string
		wait    bool
		timeout time.Duration
		output  outputFlag
		verbose bool
	)
	cmd := &cobra.Command{
		Use:   "submit --audio-url URL [job flags | --params file.json] [--wait]",
		Short: "Create a pre-recorded job whose callback comes back to scribehook",
		Long: `Creates a pre-recorded job at the service with a callback pointing back at this scribehook:
a fresh token is minted and stored, and callback_config.url is public_url/v1/callbacks/<token>.
The job is recorded in the local store and its id printed.

The callback is received by "scribehook serve", which must be running with the same
configuration (the same store) and be reachable by the service at public_url. --wait then
watches the local store until the callback has been processed; it never polls the service.
It exits 0 when the job succeeded, non-zero when it failed or when --timeout passes first.

--params reads a JSON body (the fields of a pre-recorded request, - for stdin); job flags
given on the command line override its values. The callback settings of --params are
replaced.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			method = strings.ToUpper(method)
			if method != http.MethodPost && method != http.MethodPut {
				return fmt.Errorf("--method %q: use POST or PUT", method)
			}
			req, err := jf.request(cmd)
			if err != nil {
				return err
			}
			return withService(cmd, verbose, func(ctx context.Context, cfg configs.Config, st store.Store, client *submitter.Client) error {
				warn := func(format string, args ...any) { fmt.Fprintf(cmd.ErrOrStderr(), "warning: "+format+"\n", args...) }
				id, err := submitJob(ctx, cfg, st, client, &req, method, warn)
				if err != nil {
					return err
				}
				if !wait && output.json() {
					return writeJSON(cmd.OutOrStdout(), map[string]string{"id": id})
				}
				if !output.json() {
					fmt.Fprintln(cmd.OutOrStdout(), id)
				}
				if !wait {
					return nil
				}
				rec, waited, err := waitForJob(ctx, st, id, timeout, cfg, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				if output.json() {
					local, err := localView(ctx, st, rec)
					if err != nil {
						return err
					}
					b, err := receiver.JobJSON(rec.Job, local)
					if err != nil {
						return err
					}
					// A failed job is printed too; its exit status says it failed.
					if err := writeJSON(cmd.OutOrStdout(), b); err != nil && rec.Job.Status == api.StatusDone {
						return err
					}
				}
				if rec.Job.Status != api.StatusDone {
					return jobFailed(rec)
				}
				if !output.json() {
					writeSummary(cmd.OutOrStdout(), rec, waited)
				}
				return nil
			})
		},
	}
	jf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&method, "method", http.MethodPost, "HTTP method of the callback: POST or PUT")
	f.BoolVar(&wait, "wait", false, "wait until serve has stored the callback, then print a summary")
	f.DurationVar(&timeout, "timeout", 30*time.Minute, "with --wait, give up after this long (0: no limit)")
	output.register(cmd, outputTable)
	f.BoolVarP(&verbose, "verbose", "v", false, "log every call to the service to stderr")
	return cmd
}

// submitJob creates the job through the kit's Submitter: its callback points back at serve.
func submitJob(ctx context.Context, cfg configs.Config, st store.Store, client *submitter.Client,
	req *api.PreRecordedRequest, method string, warn func(string, ...any)) (string, error) {
	s := &scribehook.Submitter{Store: st, Service: client, PublicURL: cfg.PublicURL, Warnf: warn}
	r := *req
	if r.CallbackConfig == nil {
		r.CallbackConfig = &api.CallbackConfig{}
	} else {
		cc := *r.CallbackConfig // the caller's request is left as it was
		r.CallbackConfig = &cc
	}
	r.CallbackConfig.Method = method
	created, err := s.Submit(ctx, r)
	return created.ID, err
}

// waitForJob reads the local store (every scribehook.DefaultWaitEvery) until the job is done or failed, with
// progress on w: a redrawn line on a terminal, a line every progressEvery otherwise.
func waitForJob(ctx context.Context, st store.Store, id string, timeout time.Duration, cfg configs.Config, w io.Writer) (store.JobRecord, time.Duration, error) {
	start := time.Now()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	p := newProgress(w, id, cfg.PublicURL)
	defer p.done()
	rec, err := scribehook.WaitJob(ctx, st, id, scribehook.DefaultWaitEvery, func(status api.JobStatus) { p.update(time.Since(start), status) })
	switch {
	case err == nil:
		return rec, time.Since(start), nil
	case errors.Is(err, context.DeadlineExceeded):
		return store.JobRecord{}, 0, fmt.Errorf("no callback for job %s within %s: is `scribehook serve` running with this configuration "+
			"(the same store) and reachable by the service at %s? The job may still finish: see `scribehook jobs show %s`",
			id, timeout, cfg.PublicURL, id)
	case errors.Is(err, context.Canceled):
		return store.JobRecord{}, 0, fmt.Errorf("stopped waiting for job %s (it goes on at the service): %w", id, ctx.Err())
	}
	return store.JobRecord{}, 0, err
}

// progressEvery spaces the plain progress lines written when stderr is not a terminal.
const progressEvery = 15 * time.Second

type progress struct {
	w        io.Writer
	tty      bool
	id       string
	frame    int
	lastLine time.Duration
	status   api.JobStatus
	drawn    bool
}

func newProgress(w io.Writer, id, publicURL string) *progress {
	p := &progress{w: w, tty: isTerminal(w), id: id}
	if !p.tty {
		fmt.Fprintf(w, "waiting for the callback of job %s (scribehook serve must be running and reachable at %s)\n", id, publicURL)
	}
	return p
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (p *progress) update(elapsed time.Duration, status api.JobStatus) {
	if status == "" {
		status = "not stored yet"
	}
	if p.tty {
		p.frame++
		fmt.Fprintf(p.w, "\r\033[K%s waiting for the callback of job %s  %s  (%s)", spinner[p.frame%len(spinner)], p.id, elapsed.Round(time.Second), status)
		p.drawn = true
		return
	}
	if status != p.status && p.status != "" {
		fmt.Fprintf(p.w, "job %s: %s\n", p.id, status)
	}
	p.status = status
	if elapsed-p.lastLine >= progressEvery {
		p.lastLine = elapsed
		fmt.Fprintf(p.w, "still waiting for job %s: %s\n", p.id, elapsed.Round(time.Second))
	}
}

func (p *progress) done() {
	if p.tty && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// jobFailed is the error of a job that ended in error, with the service's code and message.
func jobFailed(rec store.JobRecord) error {
	var parts []string
	if rec.Job.ErrorCode != nil {
		parts = append(parts, fmt.Sprintf("error code %d", *rec.Job.ErrorCode))
	}
	if rec.Local.ErrorMessage != "" {
		parts = append(parts, rec.Local.ErrorMessage)
	}
	if len(parts) == 0 {
		parts = append(parts, "no error message")
	}
	return fmt.Errorf("job %s failed: %s", rec.Job.ID, strings.Join(parts, ": "))
}

// writeSummary prints what a finished job holds: how long it took, how much audio, how many
// utterances, and its first words.
func writeSummary(w io.Writer, rec store.JobRecord, waited time.Duration) {
	var audio float64
	var utterances int
	var text string
	if r, _ := rec.Job.DecodeResult(); r != nil {
		if r.Metadata != nil {
			audio = r.Metadata.AudioDuration
		}
		if r.Transcription != nil {
			utterances = len(r.Transcription.Utterances)
			text = r.Transcription.FullTranscript
		}
	}
	fmt.Fprintf(w, "job %s done after %s: %.1fs of audio, %d utterances\n", termtext.Line(rec.Job.ID), seconds(waited), audio, utterances)
	if words := firstWords(text, 12); words != "" {
		fmt.Fprintf(w, "  %s\n", termtext.Line(words))
	}
}

// firstWords keeps the first n words of text, marking a cut with "…".
func firstWords(text string, n int) string {
	words := strings.Fields(text)
	if len(words) > n {
		return strings.Join(words[:n], " ") + " …"
	}
	return strings.Join(words, " ")
}
