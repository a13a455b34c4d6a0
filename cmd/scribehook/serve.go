package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/submitter"
	"github.com/scribehook/scribehook/subtitles"
)

func newServeCmd() *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Receive callbacks durably, process them, and serve the local read API",
		Long: `Runs the callback endpoint (POST|PUT /v1/callbacks/{token}), the processing pipeline, and the
local read API (/v1/jobs, /v1/live/{id}/messages, /v1/live/{id}/events) with /healthz, /readyz and
/metrics. A delivery is answered 2xx only once it is committed to the store; deliveries
committed before a stop are processed at the next start.

Without a configuration file it runs on the defaults: SQLite in scribehook.db, listening on
127.0.0.1:8787. Secrets come from the environment variables the configuration names.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			secrets, err := cfg.Secrets(os.Environ())
			if err != nil {
				return err
			}
			log := stderrLogger(cmd, verbose)
			if !verbose {
				// A daemon says what it does; the one-shot commands stay quiet.
				log.Logger.SetLevel(logrus.InfoLevel)
			}
			ctx := cmd.Context()
			st, err := openStore(ctx, cfg)
			if err != nil {
				return err
			}
			defer st.Close()

			var service *submitter.Client
			if secrets.APIKey != "" {
				if service, err = serviceClient(cfg, secrets); err != nil {
					return err
				}
			} else {
				log.Warnf("%s is not set: callbacks are stored as they come, account webhooks stay unresolved", cfg.Service.APIKeyEnv)
			}
			if secrets.ReadToken == "" {
				log.Warnf("%s is not set: the local read API is disabled", cfg.ReadTokenEnv)
			}
			names := make([]string, 0, len(secrets.Routes))
			for name := range secrets.Routes {
				names = append(names, name)
			}
			sort.Strings(names)
			routes := make([]receiver.Route, 0, len(names))
			for _, name := range names {
				r := secrets.Routes[name]
				routes = append(routes, receiver.Route{Name: name, Token: r.Token, SigningSecrets: r.SigningSecrets})
			}
			subs, err := subtitleSetup(cfg)
			if err != nil {
				return err
			}
			sinkSetups, err := buildSinks(cfg, secrets, log)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", cfg.Listen)
			if err != nil {
				closeSinks(sinkSetups)
				return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
			}
			bus, err := openBus(ctx, cfg, log)
			if err != nil {
				_ = ln.Close()
				closeSinks(sinkSetups)
				return err
			}
			if bus != nil && cfg.Store.Driver == "sqlite" {
				log.Warnf("bus.driver %s with store.driver sqlite: replicas cannot share a SQLite file, so run one replica, or use store.driver postgres", cfg.Bus.Driver)
			}
			if bus == nil && cfg.Store.Driver == "postgres" {
				// Measured (docs/scaling.md): two replicas on the in-process bus stored most
				// sessions out of order.
				log.Warn("bus.driver gochannel with store.driver postgres: run one replica only; several replicas need bus.driver redisstream or nats, or live sessions lose their order")
			}
			srv, err := startServer(ctx, serverOptions{
				Store: st, Listener: ln, Routes: routes, ReadToken: secrets.ReadToken, Service: service,
				BodyLimit: int(cfg.Receiver.BodyLimit), Partitions: cfg.Receiver.Partitions, Logger: log,
				PublicURL: cfg.PublicURL, TokenTTL: cfg.Receiver.TokenTTL, MaxConnsPerIP: cfg.Receiver.MaxConnsPerIP,
				Subtitles: subs, Sinks: sinkSetups, Bus: bus,
				SweepInterval: cfg.Bus.SweepInterval, SweepGrace: cfg.Bus.SweepGrace, NoticeQueue: cfg.Bus.Queue,
			})
			if err != nil {
				_ = ln.Close()
				return err
			}
			busDesc := cfg.Bus.Driver
			if bus != nil {
				busDesc += " " + bus.Redacted()
			}
			log.WithFields(logrus.Fields{
				"listen": ln.Addr().String(), "public_url": cfg.PublicURL, "store": configs.RedactURL(cfg.Store.DSN),
				"bus": busDesc, "routes": len(routes), "sinks": len(sinkSetups),
			}).Info("scribehook serving")
			<-ctx.Done()
			log.Info("shutting down: finishing in-flight requests, then the pipeline")
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "debug logs")
	return cmd
}

// subtitleSetup is the pipeline's subtitle rendering from the configuration.
func subtitleSetup(cfg configs.Config) (handlers.SubtitleConfig, error) {
	profile, err := subtitles.ProfileByName(cfg.Subtitles.Profile)
	if err != nil {
		return handlers.SubtitleConfig{}, fmt.Errorf("subtitles.profile: %w", err)
	}
	out := handlers.SubtitleConfig{Dir: cfg.Subtitles.Dir, Profile: profile}
	for i, name := range cfg.Subtitles.Formats {
		f, err := subtitles.ParseFormat(name)
		if err != nil {
			return handlers.SubtitleConfig{}, fmt.Errorf("subtitles.formats[%d]: %w", i, err)
		}
		out.Formats = append(out.Formats, f)
	}
	if len(out.Formats) == 0 {
		out.Dir = ""
	}
	return out, nil
}

// buildSinks turns the configured sinks into running ones; secrets come from the environment.
func buildSinks(cfg configs.Config, secrets configs.Secrets, log *logrus.Entry) ([]sinkSetup, error) {
	out := make([]sinkSetup, 0, len(cfg.Sinks))
	for i, c := range cfg.Sinks {
		spec := sinks.Spec{
			Name: c.Name, Kind: c.Kind, Ordered: c.Ordered, Dir: c.Dir, Timeout: c.Timeout,
			Allow: c.Allow, Topic: c.Topic,
			Filter: sinks.Filter{Events: c.Events},
		}
		switch c.Kind {
		case "webhook":
			spec.URL = c.URL
		case "redisstream", "nats":
			spec.BrokerURL = c.URL
		}
		if secret := secrets.Sinks[c.Name]; secret != "" {
			spec.SigningSecrets = strings.FieldsFunc(secret, func(r rune) bool { return r == ' ' || r == ',' })
		}
		for _, cat := range c.Categories {
			spec.Filter.Categories = append(spec.Filter.Categories, api.MessageCategory(cat))
		}
		for _, k := range c.Kinds {
			spec.Filter.Kinds = append(spec.Filter.Kinds, api.JobKind(k))
		}
		if c.CustomMetadata != "" {
			spec.Filter.CustomMetadata = json.RawMessage(c.CustomMetadata)
		}
		sk, err := sinks.New(spec, sinks.Deps{Logger: log.WithField("sink", c.Name)})
		if err != nil {
			for _, done := range out {
				_ = done.Sink.Close()
			}
			return nil, fmt.Errorf("sinks[%d] (%s): %w", i, c.Name, err)
		}
		out = append(out, sinkSetup{Spec: spec, Sink: sk})
	}
	return out, nil
}

// closeSinks closes built sinks that will not run.
func closeSinks(setups []sinkSetup) {
	for _, sk := range setups {
		_ = sk.Sink.Close()
	}
}
