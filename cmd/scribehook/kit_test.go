package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/submitter"
)

// serverOptions is what the tests vary of a serve process; startServer turns it into the
// configuration and options of a scribehook.Kit, the one start-up there is.
type serverOptions struct {
	Store      store.Store
	Listener   net.Listener
	Routes     []receiver.Route
	ReadToken  string
	Service    *submitter.Client
	BodyLimit  int
	Partitions int
	Logger     *logrus.Entry
	Subtitles  handlers.SubtitleRendering // Dir empty: none rendered
	Sinks      []sinkSetup
	// Bus, when its Driver is set, replaces the configuration's bus section.
	Bus configs.BusConfig
	// InboxRetry, when set, is the retry schedule of deliveries whose apply fails.
	InboxRetry []time.Duration
}

// sinkSetup is a sink the test built, with its spec.
type sinkSetup struct {
	Spec sinks.Spec
	Sink sinks.Sink
}

// startServer builds, starts and serves a kit on o.Listener with o's store (which the caller
// closes after the kit's Shutdown).
func startServer(ctx context.Context, o serverOptions) (*scribehook.Kit, error) {
	cfg := configs.Default()
	cfg.PublicURL = "http://" + o.Listener.Addr().String()
	cfg.Subtitles = configs.SubtitlesConfig{Profile: configs.DefaultProfile}
	if o.Subtitles.Dir != "" {
		cfg.Subtitles = configs.SubtitlesConfig{Profile: o.Subtitles.Profile.Name, Dir: o.Subtitles.Dir}
		for _, f := range o.Subtitles.Formats {
			cfg.Subtitles.Formats = append(cfg.Subtitles.Formats, string(f))
		}
	}
	if o.BodyLimit > 0 {
		cfg.Receiver.BodyLimit = int64(o.BodyLimit)
	}
	if o.Partitions > 0 {
		cfg.Receiver.Partitions = o.Partitions
	}
	if o.Bus.Driver != "" {
		def := cfg.Bus
		cfg.Bus = o.Bus
		if cfg.Bus.Topic == "" {
			cfg.Bus.Topic = def.Topic
		}
		if cfg.Bus.Group == "" {
			cfg.Bus.Group = def.Group
		}
		if cfg.Bus.Queue == 0 {
			cfg.Bus.Queue = def.Queue
		}
		if cfg.Bus.SweepInterval == 0 {
			cfg.Bus.SweepInterval = def.SweepInterval
		}
		if cfg.Bus.SweepGrace == 0 {
			cfg.Bus.SweepGrace = def.SweepGrace
		}
		if cfg.Bus.ClaimAfter == 0 {
			cfg.Bus.ClaimAfter = def.ClaimAfter
		}
	}
	secrets := configs.Secrets{ReadToken: o.ReadToken, Routes: map[string]configs.RouteSecrets{}}
	for _, r := range o.Routes {
		secrets.Routes[r.Name] = configs.RouteSecrets{Token: r.Token, SigningSecrets: r.SigningSecrets}
	}
	if o.Logger == nil {
		o.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	opts := []scribehook.Option{scribehook.WithStore(o.Store), scribehook.WithSecrets(secrets), scribehook.WithLogger(o.Logger)}
	if o.Service != nil {
		opts = append(opts, scribehook.WithService(o.Service))
	}
	for _, sk := range o.Sinks {
		opts = append(opts, scribehook.WithSink(sk.Spec, sk.Sink))
	}
	if o.InboxRetry != nil {
		opts = append(opts, scribehook.WithInboxRetry(o.InboxRetry...))
	}
	kit, err := scribehook.New(ctx, cfg, opts...)
	if err != nil {
		return nil, err
	}
	if err := kit.Start(ctx); err != nil {
		_ = kit.Close()
		return nil, fmt.Errorf("start: %w", err)
	}
	go func() { _ = kit.Serve(o.Listener) }()
	return kit, nil
}
