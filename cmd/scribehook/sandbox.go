package main

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/netguard"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sandbox/engine"
	"github.com/scribehook/scribehook/submitter"
)

func newSandboxCmd() *cobra.Command {
	var (
		listen, apiKey, apiKeyEnv, keyHeader, engineName, faults, publicURL string
		workers                                                             int
		delay                                                               time.Duration
		verbose                                                             bool
		allowFetch                                                          []string
		maxFetchBytes, maxUploadStoreBytes                                  int64
		uploadTTL                                                           time.Duration
	)
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Run a local stand-in of the transcription service",
		Long: `Runs every endpoint of the service on this machine: pre-recorded jobs, live sessions over
WebSocket, lists, callbacks, uploads, with a speech engine that needs no account.

The API key comes from --api-key or from the environment variable named by --api-key-env.

Audio URLs are fetched, and callbacks sent, to public addresses only: loopback (127.0.0.0/8,
::1, also written as ::ffff:127.0.0.1), 0.0.0.0 and ::, private, link-local, carrier-grade NAT
and cloud metadata addresses are refused when connecting, on every redirect, unless a range
given with --allow-fetch covers them. To transcribe files served on this machine, or to call
back a receiver on it (scribehook serve), pass --allow-fetch 127.0.0.0/8. A job whose audio
cannot be fetched, for whatever reason, fails with the same error 400 "audio_url could not be
fetched"; the reason is in the sandbox's log, as is a refused callback's.

Uploads (POST /v2/upload) are kept on disk, at most --max-upload-store-bytes of them together;
one that no job uses goes after --upload-ttl, one a job uses with the last such job. Their
audio_url carries a token: with it, or with the API key, GET /v2/files/{id} answers the bytes
as application/octet-stream, an attachment.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			key := apiKey
			if key == "" {
				key = os.Getenv(apiKeyEnv)
			}
			if key == "" {
				return fmt.Errorf("no api key: pass --api-key or set %s", apiKeyEnv)
			}
			log := logrus.New()
			log.SetOutput(cmd.ErrOrStderr())
			if verbose {
				log.SetLevel(logrus.DebugLevel)
			}
			engines := engine.NewRegistry()
			eng, err := engines.New(engineName)
			if err != nil {
				return fmt.Errorf("engine %q: %w (this build has: %s)", engineName, err, strings.Join(engines.Names(), ", "))
			}
			// Real engines hold decoders and models; release them when the sandbox stops.
			defer eng.Close()
			f, err := sandbox.ParseFaults(faults)
			if err != nil {
				return err
			}
			allow, err := parseAllowFetch(allowFetch)
			if err != nil {
				return err
			}
			if maxFetchBytes <= 0 {
				return fmt.Errorf("--max-fetch-bytes must be positive (got %d)", maxFetchBytes)
			}
			if maxUploadStoreBytes <= 0 {
				return fmt.Errorf("--max-upload-store-bytes must be positive (got %d)", maxUploadStoreBytes)
			}
			if uploadTTL <= 0 {
				return fmt.Errorf("--upload-ttl must be positive (got %s)", uploadTTL)
			}
			srv, err := sandbox.New(sandbox.Config{
				APIKey: key, KeyHeader: keyHeader, PublicURL: publicURL, Engine: eng,
				Workers: workers, ProcessingDelay: delay, Faults: f, Logger: logrus.NewEntry(log),
				AllowFetch: allow, MaxFetchBytes: maxFetchBytes,
				MaxUploadStoreBytes: maxUploadStoreBytes, UploadTTL: uploadTTL,
			})
			if err != nil {
				return err
			}
			defer srv.Close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", listen, err)
			}
			log.WithFields(logrus.Fields{"listen": ln.Addr().String(), "engine": eng.Name()}).Info("sandbox ready")
			return srv.Serve(cmd.Context(), ln)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&listen, "listen", "127.0.0.1:8788", "address to listen on")
	fl.StringVar(&apiKey, "api-key", "", "API key clients must send (prefer --api-key-env)")
	fl.StringVar(&apiKeyEnv, "api-key-env", configs.DefaultAPIKeyEnv, "environment variable holding the API key")
	fl.StringVar(&keyHeader, "key-header", submitter.DefaultKeyHeader, "header carrying the API key")
	fl.StringVar(&engineName, "engine", "scripted", "speech engine")
	fl.StringVar(&faults, "faults", "", "fault injection, e.g. duplicate=1,delay=200ms,reorder=5,fail-first=2,fail-jobs=0.25,drop=0.5,seed=7")
	fl.StringVar(&publicURL, "public-url", "", "base URL clients reach the sandbox at (default: from each request)")
	fl.IntVar(&workers, "workers", 2, "pre-recorded jobs processed at once")
	fl.DurationVar(&delay, "processing-delay", 0, "time each job spends in queued and in processing")
	fl.BoolVarP(&verbose, "verbose", "v", false, "debug logs")
	fl.StringArrayVar(&allowFetch, "allow-fetch", nil, "CIDR range (or address) audio URLs and callbacks may reach although loopback, private or link-local, e.g. 127.0.0.0/8; repeatable (default: public addresses only)")
	fl.Int64Var(&maxFetchBytes, "max-fetch-bytes", sandbox.DefaultMaxFetchBytes, "largest audio file fetched from an audio URL, in bytes")
	fl.Int64Var(&maxUploadStoreBytes, "max-upload-store-bytes", sandbox.DefaultMaxUploadStoreBytes, "bytes of uploads kept at once, all together")
	fl.DurationVar(&uploadTTL, "upload-ttl", sandbox.DefaultUploadTTL, "how long an upload no job uses is kept")
	return cmd
}

// parseAllowFetch reads the --allow-fetch values; a single address stands for itself alone.
func parseAllowFetch(values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range values {
		p, err := netguard.ParsePrefix(v)
		if err != nil {
			return nil, fmt.Errorf("--allow-fetch: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}
