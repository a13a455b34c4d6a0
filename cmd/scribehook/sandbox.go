package main

import (
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sandbox/engine"
)

func newSandboxCmd() *cobra.Command {
	var (
		listen, apiKey, apiKeyEnv, keyHeader, engineName, faults, publicURL string
		workers                                                             int
		delay                                                               time.Duration
		verbose                                                             bool
	)
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Run a local stand-in of the transcription service",
		Long: `Runs every endpoint of the service on this machine: pre-recorded jobs, live sessions over
WebSocket, lists, callbacks, uploads, with a speech engine that needs no account.

The API key comes from --api-key or from the environment variable named by --api-key-env.`,
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
			srv, err := sandbox.New(sandbox.Config{
				APIKey: key, KeyHeader: keyHeader, PublicURL: publicURL, Engine: eng,
				Workers: workers, ProcessingDelay: delay, Faults: f, Logger: logrus.NewEntry(log),
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
	fl.StringVar(&apiKeyEnv, "api-key-env", "SCRIBEHOOK_API_KEY", "environment variable holding the API key")
	fl.StringVar(&keyHeader, "key-header", "x-service-key", "header carrying the API key")
	fl.StringVar(&engineName, "engine", "scripted", "speech engine")
	fl.StringVar(&faults, "faults", "", "fault injection, e.g. duplicate=1,delay=200ms,reorder=5,fail-first=2,fail-jobs=0.25,seed=7")
	fl.StringVar(&publicURL, "public-url", "", "base URL clients reach the sandbox at (default: from each request)")
	fl.IntVar(&workers, "workers", 2, "pre-recorded jobs processed at once")
	fl.DurationVar(&delay, "processing-delay", 0, "time each job spends in queued and in processing")
	fl.BoolVarP(&verbose, "verbose", "v", false, "debug logs")
	return cmd
}
