package scribehook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/captions"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/sinks/sinkexpr"
	"github.com/scribehook/scribehook/store"
	// The embedded default store: linked by every program of the kit, as configs.Default
	// and ServeDefaults name it. PostgreSQL is opt-in (store/postgres).
	_ "github.com/scribehook/scribehook/store/sqlite"
	"github.com/scribehook/scribehook/submitter"
	"github.com/scribehook/scribehook/subtitles"
)

// validateConfig is cfg.Validate, without its rule of store.dsn when the program gives the
// store itself (WithStore): the kit then opens none.
func validateConfig(cfg configs.Config, ownStore bool) error {
	err := cfg.Validate()
	var ve *configs.ValidationError
	if !ownStore || !errors.As(err, &ve) {
		return err
	}
	rest := slices.DeleteFunc(slices.Clone(ve.Problems), func(p configs.Problem) bool { return p.Key == "store.dsn" })
	if len(rest) == 0 {
		return nil
	}
	return &configs.ValidationError{Problems: rest}
}

// OpenStore opens the store cfg names (store.driver, store.dsn) through the driver registered
// under store.driver (store.Register). The root package links the sqlite driver; a program
// that wants postgres imports it: import _ "github.com/scribehook/scribehook/store/postgres".
// The caller closes the store.
func OpenStore(ctx context.Context, cfg configs.Config) (store.Store, error) {
	return openStore(ctx, cfg, nil)
}

// openStore is OpenStore with the clock of the times the store stamps (nil: time.Now).
func openStore(ctx context.Context, cfg configs.Config, now func() time.Time) (store.Store, error) {
	d, err := storeDriver(cfg)
	if err != nil {
		return nil, err
	}
	st, err := d.Open(ctx, cfg.Store.DSN, store.DriverOptions{Synchronous: cfg.Store.Synchronous, Now: now})
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	return st, nil
}

// MigrateStore is the migration plan of the store cfg names: the schema version it has, the one
// this build writes, and each migration between them. With apply the migrations run (what
// OpenStore does before anything else); without, nothing is written, for `scribehook migrate
// --check` and any program that wants to say what an upgrade will do before doing it.
func MigrateStore(ctx context.Context, cfg configs.Config, apply bool) (store.MigrationPlan, error) {
	d, err := storeDriver(cfg)
	if err != nil {
		return store.MigrationPlan{}, err
	}
	return d.Migrate(ctx, cfg.Store.DSN, store.DriverOptions{Synchronous: cfg.Store.Synchronous, Apply: apply})
}

// storeDriver is the registered driver of store.driver; its error names the key and, for a
// driver of this module the program did not import, the import that links it.
func storeDriver(cfg configs.Config) (store.Driver, error) {
	d, err := store.Lookup(cfg.Store.Driver)
	if err != nil {
		return nil, fmt.Errorf("store.driver: %w", err)
	}
	return d, nil
}

// ServiceClient is a client of the configured service (service.base_url, service.key_header)
// authenticated with apiKey.
func ServiceClient(cfg configs.Config, apiKey string, opts ...submitter.Option) (*submitter.Client, error) {
	if apiKey == "" {
		return nil, fmt.Errorf("environment variable %s is empty: set it to the service API key (or name another variable in service.api_key_env)", cfg.Service.APIKeyEnv)
	}
	all := append([]submitter.Option{submitter.WithKeyHeader(cfg.Service.KeyHeader)}, opts...)
	return submitter.New(cfg.Service.BaseURL, apiKey, all...)
}

// openBus connects to the broker cfg names; nil for the in-process bus. Its errors name
// bus.url, redacted, or bus.driver for a driver the program does not link (the brokers are
// opt-in: import _ "github.com/scribehook/scribehook/handlers/redisbus" or .../natsbus).
func openBus(ctx context.Context, cfg configs.Config, log *logrus.Entry) (*handlers.Bus, error) {
	if cfg.Bus.Driver == "" || cfg.Bus.Driver == "gochannel" {
		return nil, nil
	}
	maxLen := cfg.Bus.MaxLen
	if maxLen == 0 {
		maxLen = -1 // bus.max_len 0 is unbounded; the handlers' 0 is their default
	}
	bus, err := handlers.OpenBus(ctx, handlers.BusConfig{
		Driver: cfg.Bus.Driver, URL: cfg.Bus.URL, Topic: cfg.Bus.Topic, Group: cfg.Bus.Group,
		Consumer: cfg.Bus.Consumer, ClaimAfter: cfg.Bus.ClaimAfter, MaxLen: maxLen,
		Logger: log,
	})
	if errors.Is(err, handlers.ErrUnknownBusDriver) {
		return nil, fmt.Errorf("bus.driver: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("bus.url %s (bus.driver %s): %w", configs.RedactBusURL(cfg.Bus.URL), cfg.Bus.Driver, err)
	}
	return bus, nil
}

// captionsConfig is the live captions' configuration as cfg.Captions describes it, cut with
// the profile of cfg.Subtitles.
func captionsConfig(cfg configs.Config) (captions.Config, error) {
	profile, err := subtitles.ProfileByName(cfg.Subtitles.Profile)
	if err != nil {
		return captions.Config{}, fmt.Errorf("subtitles.profile: %w", err)
	}
	c := captions.Config{Segment: cfg.Captions.Segment, Delay: cfg.Captions.Delay, Window: cfg.Captions.Window, Profile: &profile}
	if err := c.Validate(); err != nil {
		return captions.Config{}, fmt.Errorf("captions: %w", err)
	}
	return c, nil
}

// SubtitleRendering is the pipeline's subtitle rendering as cfg.Subtitles describes it.
func SubtitleRendering(cfg configs.Config) (handlers.SubtitleRendering, error) {
	profile, err := subtitles.ProfileByName(cfg.Subtitles.Profile)
	if err != nil {
		return handlers.SubtitleRendering{}, fmt.Errorf("subtitles.profile: %w", err)
	}
	out := handlers.SubtitleRendering{Dir: cfg.Subtitles.Dir, Profile: profile}
	for i, name := range cfg.Subtitles.Formats {
		f, err := subtitles.ParseFormat(name)
		if err != nil {
			return handlers.SubtitleRendering{}, fmt.Errorf("subtitles.formats[%d]: %w", i, err)
		}
		out.Formats = append(out.Formats, f)
	}
	if len(out.Formats) == 0 {
		out.Dir = ""
	}
	return out, nil
}

// SinkSpecs turns the configured sinks into specs, with their secrets.
func SinkSpecs(cfg configs.Config, secrets configs.Secrets) []sinks.Spec {
	out := make([]sinks.Spec, 0, len(cfg.Sinks))
	for _, c := range cfg.Sinks {
		spec := sinks.Spec{
			Name: c.Name, Kind: c.Kind, Ordered: c.Ordered, Concurrency: c.Concurrency, Dir: c.Dir, Timeout: c.Timeout,
			URL: c.URL, Allow: c.Allow, Topic: c.Topic, Prefix: c.Prefix, Raw: c.Raw,
			Retry: c.Retry, Rate: c.Rate, RateBurst: c.RateBurst,
			Filter: sinks.Filter{Events: c.Events},
		}
		if k, ok := secrets.BlobKeys[c.Name]; ok {
			spec.Keys = sinks.StaticKeys{AccessKeyID: k.AccessKeyID, SecretAccessKey: k.SecretAccessKey, SessionToken: k.SessionToken}
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
		sinkExprs(c, &spec)
		out = append(out, spec)
	}
	return out
}

// sinkExprs compiles the sink's when, body and headers into spec. The configuration's
// validation compiled them already; one that fails here (a configuration not validated) is
// sinkexpr.Failed, which takes no event and dead-letters every body, never widening the sink.
func sinkExprs(c configs.Sink, spec *sinks.Spec) {
	compile := func(src string, out sinkexpr.Output) *sinkexpr.Program {
		p, err := sinkexpr.Compile(src, out)
		if err != nil {
			return sinkexpr.Failed(src, err)
		}
		return p
	}
	if c.When != "" {
		spec.Filter.When = compile(c.When, sinkexpr.Bool)
	}
	if c.Body != "" {
		spec.Body = compile(c.Body, sinkexpr.Value)
	}
	for name, src := range c.Headers {
		if spec.Headers == nil {
			spec.Headers = map[string]*sinkexpr.Program{}
		}
		spec.Headers[name] = compile(src, sinkexpr.String)
	}
}

// routesOf lists the static callback routes of the secrets, by name.
func routesOf(secrets configs.Secrets) []receiver.Route {
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
	return routes
}
