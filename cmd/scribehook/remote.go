package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/termtext"
	"github.com/scribehook/scribehook/submitter"
)

// envServiceBaseURL overrides service.base_url in the configuration too (configs.EnvPrefix).
const envServiceBaseURL = configs.EnvPrefix + "SERVICE_BASE_URL"

// remoteOptions are the connection flags shared by the remote subcommands. The key itself is
// never a flag: flags end up in shell history and process listings.
type remoteOptions struct {
	baseURL   string
	apiKeyEnv string
	keyHeader string
	verbose   bool
}

func newRemoteCmd() *cobra.Command {
	o := &remoteOptions{}
	cmd := groupCmd("remote", "Call the service's own endpoints: list, get, create and delete jobs", "",
		newRemoteListCmd(o), newRemoteGetCmd(o), newRemoteCreateCmd(o), newRemoteDeleteCmd(o))
	base := os.Getenv(envServiceBaseURL)
	if base == "" {
		base = configs.DefaultServiceURL
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.baseURL, "base-url", base, "base URL of the service (default from "+envServiceBaseURL+")")
	pf.StringVar(&o.apiKeyEnv, "api-key-env", configs.DefaultAPIKeyEnv, "environment variable that holds the API key")
	pf.StringVar(&o.keyHeader, "key-header", submitter.DefaultKeyHeader, "header that carries the API key")
	pf.BoolVarP(&o.verbose, "verbose", "v", false, "log every call and retry to stderr")
	return cmd
}

func (o *remoteOptions) client(cmd *cobra.Command) (*submitter.Client, error) {
	key, err := configs.LookupSecret(os.Environ(), o.apiKeyEnv) // as submit and live read theirs
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, fmt.Errorf("environment variable %s is empty: set it to the service API key", o.apiKeyEnv)
	}
	return submitter.New(o.baseURL, key,
		submitter.WithKeyHeader(o.keyHeader),
		submitter.WithLogger(stderrLogger(cmd, o.verbose)))
}

func newRemoteListCmd(o *remoteOptions) *cobra.Command {
	var (
		lf   listFlags
		live bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs on the service, with its filters and automatic paging",
		Long: "List jobs on the service. By default the pre-recorded list; --live lists live sessions;\n" +
			"--kind uses the deprecated /v2/transcription list, the only one that filters on kind.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if live && len(lf.kinds) > 0 {
				return errors.New("--live and --kind exclude each other: the live list has no kind filter")
			}
			q, err := lf.query(cmd)
			if err != nil {
				return err
			}
			endpoint := submitter.EndpointPreRecorded
			switch {
			case live:
				endpoint = submitter.EndpointLive
			case len(lf.kinds) > 0:
				endpoint = submitter.EndpointTranscription
			}

			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			jobs, err := readList(cmd, &lf, func() ([]api.Job, bool, error) {
				page, err := c.List(cmd.Context(), endpoint, q)
				return page.Items, page.Next != nil, err
			}, c.All(cmd.Context(), endpoint, q))
			if err != nil {
				return err
			}
			return lf.output.print(cmd.OutOrStdout(), jobs, func(w io.Writer) error { return writeJobsTable(w, jobs) })
		},
	}
	f := cmd.Flags()
	f.BoolVar(&live, "live", false, "list live sessions (GET /v2/live)")
	lf.register(cmd)
	return cmd
}

func newRemoteGetCmd(o *remoteOptions) *cobra.Command {
	var output outputFlag
	cmd := remoteJobCmd(o, "get ID", "Show one job record of the service", "GET",
		func(cmd *cobra.Command, c *submitter.Client, live bool, id string) error {
			get := c.GetPreRecorded
			if live {
				get = c.GetLive
			}
			job, err := get(cmd.Context(), id)
			if err != nil {
				return err
			}
			return output.print(cmd.OutOrStdout(), job, func(w io.Writer) error { return writeJobsTable(w, []api.Job{job}) })
		})
	output.register(cmd, outputJSON)
	return cmd
}

// jobFlags are the job settings that create takes as flags; each applies only when given, so
// that it overrides, and never blanks, what --params holds.
type jobFlags struct {
	audioURL, paramsFile, callbackURL, callbackMethod, summarizationType string
	languages, subtitleFormats, translateTo, metadata                    []string
	deprecatedEndpoint                                                   bool
}

// jobSwitches are the job flags that turn one feature of the request on or off.
var jobSwitches = []struct {
	name, usage string
	field       func(*api.PreRecordedRequest) **bool
}{
	{"subtitles", "generate subtitles", func(r *api.PreRecordedRequest) **bool { return &r.Subtitles }},
	{"diarization", "recognise speakers", func(r *api.PreRecordedRequest) **bool { return &r.Diarization }},
	{"summarization", "summarise", func(r *api.PreRecordedRequest) **bool { return &r.Summarization }},
	{"sentiment-analysis", "analyse sentiment", func(r *api.PreRecordedRequest) **bool { return &r.SentimentAnalysis }},
	{"named-entity-recognition", "recognise named entities", func(r *api.PreRecordedRequest) **bool { return &r.NamedEntityRecognition }},
	{"chapterization", "split into chapters", func(r *api.PreRecordedRequest) **bool { return &r.Chapterization }},
}

func newRemoteCreateCmd(o *remoteOptions) *cobra.Command {
	var jf jobFlags
	var output outputFlag
	cmd := &cobra.Command{
		Use:   "create --audio-url URL [--params file.json] [job flags]",
		Short: "Create a pre-recorded job on the service",
		Long: "Create a pre-recorded job. --params reads a JSON body (the fields of a pre-recorded\n" +
			"request, - for stdin); job flags given on the command line override its values.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req, err := jf.request(cmd)
			if err != nil {
				return err
			}
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			create := c.CreatePreRecorded
			if jf.deprecatedEndpoint {
				create = c.CreateTranscription
			}
			out, err := create(cmd.Context(), req)
			if err != nil {
				return err
			}
			return output.print(cmd.OutOrStdout(), out, func(w io.Writer) error {
				tw := newTable(w)
				fmt.Fprintf(tw, "ID\tRESULT_URL\n%s\t%s\n", cell(out.ID), cell(out.ResultURL))
				return tw.Flush()
			})
		},
	}
	f := cmd.Flags()
	jf.register(cmd)
	f.StringVar(&jf.callbackURL, "callback-url", "", "send the result to this URL (sets callback and callback_config)")
	f.StringVar(&jf.callbackMethod, "callback-method", "", "HTTP method of the callback: POST or PUT")
	f.BoolVar(&jf.deprecatedEndpoint, "deprecated-endpoint", false, "create through the deprecated POST /v2/transcription")
	output.register(cmd, outputTable)
	return cmd
}

// register adds the job flags that every command creating a pre-recorded job takes (remote
// create, submit); the callback flags stay with the commands that let the user choose.
func (jf *jobFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&jf.audioURL, "audio-url", "", "URL of the audio or video file")
	f.StringVar(&jf.paramsFile, "params", "", "JSON file with the request body (- for stdin)")
	f.StringSliceVar(&jf.languages, "language", nil, "spoken language codes (language_config.languages); none means detect")
	f.StringSliceVar(&jf.subtitleFormats, "subtitles-format", nil, "subtitle formats: srt, vtt (implies --subtitles)")
	f.StringVar(&jf.summarizationType, "summarization-type", "", "general, bullet_points or concise (implies --summarization)")
	f.StringSliceVar(&jf.translateTo, "translate-to", nil, "target language codes (enables translation)")
	for _, sw := range jobSwitches {
		f.Bool(sw.name, false, sw.usage) // read back by name in request
	}
	f.StringArrayVar(&jf.metadata, "metadata", nil, "custom_metadata as key=value (repeatable)")
}

// request builds the body: --params first, then every flag that was given.
func (jf *jobFlags) request(cmd *cobra.Command) (api.PreRecordedRequest, error) {
	var req api.PreRecordedRequest
	if jf.paramsFile != "" {
		raw, err := readParams(cmd, jf.paramsFile)
		if err != nil {
			return req, err
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			return req, fmt.Errorf("decode %s: %w", jf.paramsFile, err)
		}
	}
	set := cmd.Flags().Changed
	if set("audio-url") {
		req.AudioURL = jf.audioURL
	}
	if req.AudioURL == "" {
		return req, errors.New("--audio-url is required (or audio_url in --params)")
	}
	if set("callback-url") || set("callback-method") {
		if set("callback-url") {
			ensure(&req.CallbackConfig).URL = jf.callbackURL
		}
		if set("callback-method") {
			ensure(&req.CallbackConfig).Method = strings.ToUpper(jf.callbackMethod)
		}
		req.Callback = api.Bool(true)
	}
	if set("language") {
		ensure(&req.LanguageConfig).Languages = jf.languages
	}
	for _, sw := range jobSwitches {
		if set(sw.name) {
			on, err := cmd.Flags().GetBool(sw.name)
			if err != nil {
				return req, err
			}
			*sw.field(&req) = api.Bool(on)
		}
	}
	if set("subtitles-format") {
		ensure(&req.SubtitlesConfig).Formats = jf.subtitleFormats
		if !set("subtitles") {
			req.Subtitles = api.Bool(true)
		}
	}
	if set("summarization-type") {
		req.SummarizationConfig = &api.SummarizationConfig{Type: jf.summarizationType}
		if !set("summarization") {
			req.Summarization = api.Bool(true)
		}
	}
	if set("translate-to") {
		ensure(&req.TranslationConfig).TargetLanguages = jf.translateTo
		req.Translation = api.Bool(true)
	}
	if set("metadata") {
		md, err := metadataObject(jf.metadata)
		if err != nil {
			return req, err
		}
		req.CustomMetadata = md
	}
	return req, nil
}

// ensure is the object *p points to, created when absent, so that a flag sets one member of
// an object --params may already hold without blanking the others.
func ensure[T any](p **T) *T {
	if *p == nil {
		*p = new(T)
	}
	return *p
}

func readParams(cmd *cobra.Command, name string) ([]byte, error) {
	if name == "-" {
		raw, err := io.ReadAll(cmd.InOrStdin())
		if err != nil {
			return nil, fmt.Errorf("read params from stdin: %w", err)
		}
		return raw, nil
	}
	raw, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("read params: %w", err)
	}
	return raw, nil
}

func newRemoteDeleteCmd(o *remoteOptions) *cobra.Command {
	return remoteJobCmd(o, "delete ID", "Delete one job on the service", "DELETE",
		func(cmd *cobra.Command, c *submitter.Client, live bool, id string) error {
			del := c.DeletePreRecorded
			if live {
				del = c.DeleteLive
			}
			if err := del(cmd.Context(), id); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", id)
			return nil
		})
}

// remoteJobCmd is a remote command on one job by its id (get, delete), with --live for a live
// session (method /v2/live/{id}); run gets the service's client.
func remoteJobCmd(o *remoteOptions, use, short, method string,
	run func(cmd *cobra.Command, c *submitter.Client, live bool, id string) error) *cobra.Command {
	var live bool
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			return run(cmd, c, live, args[0])
		},
	}
	cmd.Flags().BoolVar(&live, "live", false, "the id is a live session ("+method+" /v2/live/{id})")
	return cmd
}

// writeJSON prints v indented; the job records keep the members this model does not know.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeJobsTable prints one aligned row per job.
func writeJobsTable(w io.Writer, jobs []api.Job) error {
	return writeRows(w, "ID\tKIND\tSTATUS\tCREATED\tDURATION\tFILE", jobs, func(j api.Job) string {
		created, duration, file := cell(stamp(j.CreatedAt.Time)), "-", "-"
		if j.File != nil {
			duration = time.Duration(j.File.AudioDuration * float64(time.Second)).Round(100 * time.Millisecond).String()
			file = cell(j.File.Filename)
		}
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", cell(j.ID), cell(string(j.Kind)), cell(string(j.Status)), created, duration, file)
	})
}

// cell keeps a value on one line of its column and shows absent values as "-".
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return termtext.Line(s)
}
