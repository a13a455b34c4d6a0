package configs

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/scribehook/scribehook/sinks/sinkkind"
)

// Config is the whole configuration, in the shape of the YAML file (docs/design.md,
// Configuration).
type Config struct {
	// Listen is the address of the receiver and the local read API, host:port.
	Listen string `yaml:"listen"`
	// PublicURL is the base of the callback URLs handed to the service: the address at which
	// the service reaches Listen (through a tunnel or a load balancer in production).
	PublicURL string `yaml:"public_url"`
	// ReadTokenEnv names the variable that holds the bearer token of the local read API.
	ReadTokenEnv string          `yaml:"read_token_env"`
	Service      ServiceConfig   `yaml:"service"`
	Store        StoreConfig     `yaml:"store"`
	Bus          BusConfig       `yaml:"bus"`
	Routes       []Route         `yaml:"routes"`
	Subtitles    SubtitlesConfig `yaml:"subtitles"`
	Sinks        []Sink          `yaml:"sinks"`
	Receiver     ReceiverConfig  `yaml:"receiver"`
	Debug        DebugConfig     `yaml:"debug"`
	Retention    RetentionConfig `yaml:"retention"`
	Reconcile    ReconcileConfig `yaml:"reconcile"`
	Tracing      TracingConfig   `yaml:"tracing"`
	Captions     CaptionsConfig  `yaml:"captions"`
}

// CaptionsConfig shapes the live sessions' HLS caption tracks (GET
// /v1/live/{id}/captions.m3u8; docs/operations.md, Live captions). The bounds are the
// captions package's, repeated here: configs imports none of the parts.
type CaptionsConfig struct {
	// Segment is each WebVTT segment's duration (1s to 1m, whole milliseconds).
	Segment time.Duration `yaml:"segment"`
	// Delay holds a segment back this long after its end, so that the finals of its speech
	// have come (0s to 1h). It does not move the captions' times, which stay aligned with the
	// audio; players that play 3 segments behind the live edge need it shorter than that.
	Delay time.Duration `yaml:"delay"`
	// Window, when set, makes the playlist slide over its last Window (at least three
	// segments); 0 keeps every segment, so a player can seek back to the start.
	Window time.Duration `yaml:"window"`
}

// ReconcileConfig is the reconciliation of the jobs and live sessions the kit created with the
// service, for callbacks that never come (docs/operations.md, Reconciliation).
type ReconcileConfig struct {
	// Enabled switches it on or off; absent, it is on when a service API key is configured
	// (without one nothing can be asked).
	Enabled *bool `yaml:"enabled"`
	// After is the shortest wait after a job's creation (a session's end) before the service
	// is asked about it.
	After time.Duration `yaml:"after"`
	// Every is how often the list of jobs waiting for their end is looked at.
	Every time.Duration `yaml:"every"`
	// MaxWait caps the back-off between two questions about one job.
	MaxWait time.Duration `yaml:"max_wait"`
	// GiveUp is how long after its creation a job the service never finishes is asked about.
	GiveUp time.Duration `yaml:"give_up"`
	// AudioFactor: a job is asked again no sooner than its audio's duration times this.
	AudioFactor float64 `yaml:"audio_factor"`
	// QueueStep: a job still queued waits this much more per job of the kit's ahead of it.
	QueueStep time.Duration `yaml:"queue_step"`
	// CatchUp also lists the service's jobs and sessions, and applies the finished ones the
	// store does not have: those created elsewhere (static routes, account webhooks), whose
	// callbacks may never have come. Off by default: it costs list requests every Every.
	CatchUp bool `yaml:"catch_up"`
	// CatchUpWindow is how far back the first listing after a start goes.
	CatchUpWindow time.Duration `yaml:"catch_up_window"`
}

// On reports whether reconciliation runs, given whether a service API key is configured.
func (r ReconcileConfig) On(haveKey bool) bool {
	if r.Enabled != nil {
		return *r.Enabled && haveKey
	}
	return haveKey
}

// ServiceConfig says where the transcription service is and how to authenticate.
type ServiceConfig struct {
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the variable that holds the API key.
	APIKeyEnv string `yaml:"api_key_env"`
	// KeyHeader is the header that carries the key; the real service names it after itself.
	KeyHeader string `yaml:"key_header"`
}

// StoreConfig selects the persistence driver.
type StoreConfig struct {
	Driver string `yaml:"driver"` // sqlite or postgres
	// DSN is the SQLite file path or the PostgreSQL connection string. A password is better
	// given through SCRIBEHOOK_STORE_DSN than written in the file.
	DSN string `yaml:"dsn"`
	// Synchronous is SQLite's PRAGMA synchronous: full (a 2xx survives a power cut) or normal
	// (survives a crash of the process only).
	Synchronous string `yaml:"synchronous"`
}

// BusConfig selects the Watermill bus between the receiver and the handlers. gochannel keeps
// everything in one process; redisstream and nats (JetStream) carry a small notice per
// committed delivery through a broker that several serve replicas share, each notice going to
// one replica of a consumer group.
type BusConfig struct {
	Driver string `yaml:"driver"` // gochannel, redisstream or nats
	// URL is the broker, required by redisstream and nats: redis://[:password@]host:6379/0,
	// nats://[user:password@]host:4222. A password is better given through SCRIBEHOOK_BUS_URL
	// than written in the file; logs show it redacted.
	URL string `yaml:"url"`
	// Topic is the Redis stream or NATS subject of the notices (JetStream stores it in a
	// stream named after it, '.' becoming '_').
	Topic string `yaml:"topic"`
	// Group is the consumer group (Redis) or durable consumer (JetStream) every replica joins.
	Group string `yaml:"group"`
	// Consumer names this replica within the group (Redis); empty: host-pid-random.
	Consumer string `yaml:"consumer"`
	// ClaimAfter is how long a notice delivered to a replica may stay unacknowledged before the
	// broker gives it to another (the replica died or hangs).
	ClaimAfter time.Duration `yaml:"claim_after"`
	// SweepInterval is how often every replica looks for rows still pending (notices lost with
	// a killed replica or a broker restart), and SweepGrace how old a pending row must be for
	// the sweep to take it rather than leave it to its notice. The gochannel bus sweeps at
	// SweepInterval too.
	SweepInterval time.Duration `yaml:"sweep_interval"`
	SweepGrace    time.Duration `yaml:"sweep_grace"`
	// Queue bounds the notices waiting to be published; past it (or while the broker is down) a
	// notice is dropped and its row waits for the sweep. The receiver never waits for the
	// broker.
	Queue int `yaml:"queue"`
	// MaxLen bounds the Redis stream, approximately (0: unbounded).
	MaxLen int64 `yaml:"max_len"`
}

// Route is a static callback token: for jobs created elsewhere and for account webhooks. The
// callback URL of a route is public_url + /v1/callbacks/ + the token.
type Route struct {
	Name string `yaml:"name"`
	// TokenEnv names the variable that holds the route's token.
	TokenEnv string `yaml:"token_env"`
	// SigningSecretEnv names the variable that holds the Standard Webhooks secrets (whsec_…)
	// deliveries must be signed with; several secrets separated by spaces or commas are all
	// accepted, so that a secret can be rotated without losing deliveries. Empty: no signature
	// is checked, the token alone authenticates.
	SigningSecretEnv string `yaml:"signing_secret_env"`
}

// SubtitlesConfig sets how finished transcripts become subtitle files.
type SubtitlesConfig struct {
	Profile string   `yaml:"profile"` // netflix-adult, netflix-kids or bbc
	Formats []string `yaml:"formats"` // srt, vtt, ttml, ssa, ass, stl; empty renders none
	// Dir is where subtitle artifacts are written, as <dir>/<job_id>/<name> (serve's default
	// ./artifacts; Default's empty: nothing rendered).
	Dir string `yaml:"dir"`
}

// Sink is one destination of the events. Its kind (a package that registers it, sinkkind)
// gives dir, url, topic and allow their meaning, their defaults and their rules; the other
// keys mean the same for every kind.
type Sink struct {
	Name string `yaml:"name"`
	// Kind is one the program links: file, webhook and log always; redisstream and nats by
	// importing sinks/redissink and sinks/natssink (the scribehook binary links both).
	Kind string `yaml:"kind"`
	// Dir is where a file sink writes (default ./out).
	Dir string `yaml:"dir"`
	// URL is the webhook endpoint, or the broker address of a redisstream or nats sink.
	URL string `yaml:"url"`
	// Topic is the stream (redisstream) or subject (nats) a broker sink publishes to; default
	// scribehook.events.
	Topic string `yaml:"topic"`
	// Prefix is the key prefix of a blob sink's objects ({kind} and {type} replaced by the
	// event's); Raw makes it write the job's raw result too (result.json).
	Prefix string `yaml:"prefix"`
	Raw    bool   `yaml:"raw"`
	// AccessKeyEnv and SecretKeyEnv name the variables that hold a blob sink's S3 access key
	// pair, SessionTokenEnv its optional session token: the sink's own keys, in place of the AWS
	// SDK's usual sources (for two buckets with different keys, or keys kept out of AWS_*).
	AccessKeyEnv    string `yaml:"access_key_env"`
	SecretKeyEnv    string `yaml:"secret_key_env"`
	SessionTokenEnv string `yaml:"session_token_env"`
	// SecretEnv names the variable that holds the webhook signing secret (Standard Webhooks).
	SecretEnv string `yaml:"secret_env"`
	// Events are globs over event types (job.succeeded, live.transcript, "live.*", "*").
	Events []string `yaml:"events"`
	// Categories, when set, keep only live events of these of the nine categories; events
	// that are not live messages pass.
	Categories []string `yaml:"categories"`
	// Kinds, when set, keep only events of these job kinds (pre-recorded, live).
	Kinds []string `yaml:"kinds"`
	// CustomMetadata, when set, is a JSON object that must be a subset of the job's
	// custom_metadata, e.g. '{"team":"media"}'.
	CustomMetadata string `yaml:"custom_metadata"`
	// Ordered delivers one event at a time per job or session, in order, at the cost of
	// throughput.
	Ordered bool `yaml:"ordered"`
	// Concurrency is how many deliveries of the sink are in flight at once (default 16); an
	// ordered sink has at most one per job or session among them.
	Concurrency int `yaml:"concurrency"`
	// Retry is the schedule of the sink's attempts (default 0s, 5s, 5m, 30m, 2h, 5h, 10h, 10h):
	// Retry[0] is the wait before the first attempt, Retry[n] the wait after the n-th failed
	// attempt; after the last one the delivery is dead-lettered. Waits are spread by ±20 %.
	Retry []time.Duration `yaml:"retry"`
	// Rate bounds the sink's attempts to that many a second, retries included (a token bucket
	// in the sink's worker; 0, the default: no limit); fractions are allowed (0.5: one every
	// 2 s). RateBurst is how many may go at once after a quiet spell (default: one second's
	// worth, at least 1). Each replica has its own bucket.
	Rate      float64 `yaml:"rate"`
	RateBurst int     `yaml:"rate_burst"`
	// Allow lists hosts, addresses or CIDR ranges a webhook sink may reach although they are
	// private (rule 5 of docs/design.md): self-hosted targets.
	Allow []string `yaml:"allow"`
	// Timeout bounds one delivery attempt (default 10s).
	Timeout time.Duration `yaml:"timeout"`
	// When is a CEL expression over the event that must be true for the sink to be sent it,
	// e.g. 'event.data.result.metadata.audio_duration > 60.0' (package sinks/sinkexpr).
	When string `yaml:"when"`
	// Body is a CEL expression whose value (as JSON) a webhook sink sends instead of the
	// whole event, e.g. '{"id": event.id, "text": event.data.result.transcription.full_transcript}'.
	Body string `yaml:"body"`
	// Headers are added to a webhook sink's requests: a name, a CEL expression giving a string.
	Headers map[string]string `yaml:"headers"`
}

// entry is the part of s its kind reads.
func (s Sink) entry() sinkkind.Entry {
	return sinkkind.Entry{Name: s.Name, Dir: s.Dir, URL: s.URL, Topic: s.Topic, Allow: s.Allow}
}

// setEntry takes back what the kind's defaults filled.
func (s *Sink) setEntry(e sinkkind.Entry) {
	s.Dir, s.URL, s.Topic, s.Allow = e.Dir, e.URL, e.Topic, e.Allow
}

// ReceiverConfig tunes the callback endpoint.
type ReceiverConfig struct {
	// BodyLimit is the largest callback body accepted, in bytes (default 32 MiB); larger
	// requests get 413 and store nothing.
	BodyLimit int64 `yaml:"body_limit"`
	// Partitions is how many deliveries are processed at once; deliveries of one job or
	// session always share a partition (default 4).
	Partitions int `yaml:"partitions"`
	// TokenTTL is how long a per-job callback token minted by submit or live authenticates
	// callbacks (default 7 days, docs/security.md).
	TokenTTL time.Duration `yaml:"token_ttl"`
	// MaxConnsPerIP bounds the connections one client address (an IPv6 client's /64) holds at
	// once (default 256); -1 turns the bound off, for a proxy that brings every delivery from
	// one address.
	MaxConnsPerIP int `yaml:"max_conns_per_ip"`
	// AuthFailureBurst is how many wrong credentials (read token, dashboard sign-in, unknown
	// callback token) one client address may present before it is answered 429 for a while
	// (default 20); -1 turns the limit off. AuthFailureRefill is how often one more is allowed
	// after that (default 3s).
	AuthFailureBurst  int           `yaml:"auth_failure_burst"`
	AuthFailureRefill time.Duration `yaml:"auth_failure_refill"`
	// TrustedProxies are the CIDRs of the operator's proxies in front of serve: a request from
	// one is counted against the client its X-Forwarded-For names. Without them, behind a
	// proxy, every client shares the proxy's failures.
	TrustedProxies []string `yaml:"trusted_proxies"`
}

// DebugConfig is the profiling endpoint (net/http/pprof), off unless Listen is set. It is a
// listener of its own, never the receiver's: profiles show the process's code and memory and
// take seconds to serve.
type DebugConfig struct {
	// Listen is host:port of the endpoint, e.g. 127.0.0.1:6060; empty: no endpoint. A host
	// other than a loopback address needs AllowRemote.
	Listen string `yaml:"listen"`
	// AllowRemote lets Listen be an address other hosts can reach (all interfaces, a LAN
	// address, a host name): only behind a firewall, the endpoint has no authentication.
	AllowRemote bool `yaml:"allow_remote"`
}

// Defaults of the configuration (docs/design.md, Configuration). DefaultStoreDSN,
// DefaultArtifactsDir and DefaultSinkDir are the binary's (ServeDefaults); Default leaves the
// store's DSN empty and writes no artifacts nor sink files.
const (
	DefaultListen        = "127.0.0.1:8787"
	DefaultPublicURL     = "http://127.0.0.1:8787"
	DefaultReadTokenEnv  = "SCRIBEHOOK_READ_TOKEN"
	DefaultServiceURL    = "http://127.0.0.1:8788"
	DefaultAPIKeyEnv     = "SCRIBEHOOK_API_KEY"
	DefaultKeyHeader     = "x-service-key"
	DefaultStoreDriver   = "sqlite"
	DefaultStoreDSN      = "scribehook.db"
	DefaultSynchronous   = "full"
	DefaultBusDriver     = "gochannel"
	DefaultBusTopic      = "scribehook.inbox"
	DefaultBusGroup      = "scribehook"
	DefaultClaimAfter    = 30 * time.Second
	DefaultSweepInterval = 30 * time.Second
	// The reconciliation's defaults (reconcile package's, repeated: configs imports none).
	DefaultReconcileAfter         = 2 * time.Minute
	DefaultReconcileEvery         = 30 * time.Second
	DefaultReconcileMaxWait       = 30 * time.Minute
	DefaultReconcileGiveUp        = 72 * time.Hour
	DefaultReconcileAudioFactor   = 0.5
	DefaultReconcileQueueStep     = 10 * time.Second
	DefaultReconcileCatchUpWindow = 24 * time.Hour
	DefaultSweepGrace             = 5 * time.Second
	DefaultCaptionsSegment        = 6 * time.Second
	DefaultCaptionsDelay          = 10 * time.Second
	DefaultBusQueue               = 10000
	DefaultBusMaxLen              = 100000
	DefaultProfile                = "netflix-adult"
	DefaultArtifactsDir           = "artifacts"
	DefaultBodyLimit              = 32 << 20
	DefaultPartitions             = 4
	DefaultTokenTTL               = 7 * 24 * time.Hour
	DefaultMaxConnsPerIP          = 256
	// DefaultAuthFailureBurst and DefaultAuthFailureRefill are receiver.auth_failure_*.
	DefaultAuthFailureBurst  = 20
	DefaultAuthFailureRefill = 3 * time.Second
	DefaultSinkDir           = "./out"
	DefaultSinkTimeout       = 10 * time.Second
	DefaultSinkTopic         = "scribehook.events"
	EnvPrefix                = "SCRIBEHOOK_"
	callbackPathOfRoutes     = "/v1/callbacks/"
)

// Default returns the configuration of a program that builds a kit: the defaults of every
// key, with nothing written that the program does not ask for. Its store.dsn is empty (the
// program names its database, or gives its own store with scribehook.WithStore; Validate
// refuses it empty otherwise), it has no sink, and it renders no subtitles (set subtitles.dir
// and subtitles.formats for them). The scribehook binary's defaults, which write
// ./scribehook.db, ./artifacts and ./out, are ServeDefaults.
func Default() Config {
	return Config{
		Listen:       DefaultListen,
		PublicURL:    DefaultPublicURL,
		ReadTokenEnv: DefaultReadTokenEnv,
		Service: ServiceConfig{
			BaseURL:   DefaultServiceURL,
			APIKeyEnv: DefaultAPIKeyEnv,
			KeyHeader: DefaultKeyHeader,
		},
		Store: StoreConfig{Driver: DefaultStoreDriver, Synchronous: DefaultSynchronous},
		Bus: BusConfig{
			Driver: DefaultBusDriver, Topic: DefaultBusTopic, Group: DefaultBusGroup,
			ClaimAfter: DefaultClaimAfter, SweepInterval: DefaultSweepInterval, SweepGrace: DefaultSweepGrace,
			Queue: DefaultBusQueue, MaxLen: DefaultBusMaxLen,
		},
		Subtitles: SubtitlesConfig{Profile: DefaultProfile},
		Receiver: ReceiverConfig{
			BodyLimit: DefaultBodyLimit, Partitions: DefaultPartitions, TokenTTL: DefaultTokenTTL, MaxConnsPerIP: DefaultMaxConnsPerIP,
			AuthFailureBurst: DefaultAuthFailureBurst, AuthFailureRefill: DefaultAuthFailureRefill,
		},
		Retention: DefaultRetention(),
		Reconcile: ReconcileConfig{
			After: DefaultReconcileAfter, Every: DefaultReconcileEvery, MaxWait: DefaultReconcileMaxWait,
			GiveUp: DefaultReconcileGiveUp, AudioFactor: DefaultReconcileAudioFactor, QueueStep: DefaultReconcileQueueStep,
			CatchUpWindow: DefaultReconcileCatchUpWindow,
		},
		Tracing:  DefaultTracing(),
		Captions: CaptionsConfig{Segment: DefaultCaptionsSegment, Delay: DefaultCaptionsDelay},
	}
}

// ServeDefaults returns the configuration `scribehook serve` and `scribehook demo` run with when
// there is no file and no environment, which configs/scribehook.example.yaml documents: Default,
// with the SQLite database ./scribehook.db (DefaultStoreDSN), SRT and WebVTT rendered for every
// finished job under ./artifacts (DefaultArtifactsDir), and the "files" sink writing every event
// under ./out (DefaultSinkDir). Load starts from it.
func ServeDefaults() Config {
	c := Default()
	c.Store.DSN = DefaultStoreDSN
	c.Subtitles = SubtitlesConfig{Profile: DefaultProfile, Formats: []string{"srt", "vtt"}, Dir: DefaultArtifactsDir}
	c.Sinks = []Sink{{
		Name: "files", Kind: "file", Dir: DefaultSinkDir, Events: []string{"*"}, Timeout: DefaultSinkTimeout,
	}}
	return c
}

// CallbackURL is the URL the service calls for token: public_url + /v1/callbacks/ + token.
func (c Config) CallbackURL(token string) string {
	return strings.TrimRight(c.PublicURL, "/") + callbackPathOfRoutes + token
}

// fillElementDefaults gives list elements the defaults of their fields: a list given in the
// file or the environment replaces the default list, and its elements start from zero.
func (c *Config) fillElementDefaults() {
	for i := range c.Sinks {
		s := &c.Sinks[i]
		if s.Timeout == 0 {
			s.Timeout = DefaultSinkTimeout
		}
		if k, ok := sinkkind.Lookup(s.Kind); ok && k.Defaults != nil {
			e := s.entry()
			k.Defaults(&e)
			s.setEntry(e)
		}
	}
}

// String renders the configuration as YAML with the passwords of URLs and DSNs hidden. The
// configuration holds no secret by design, but a DSN or a broker URL may carry one.
func (c Config) String() string {
	r := c
	r.Store.DSN = redactURL(r.Store.DSN)
	r.Bus.URL = RedactBusURL(r.Bus.URL)
	r.Service.BaseURL = redactURL(r.Service.BaseURL)
	r.PublicURL = redactURL(r.PublicURL)
	r.Routes = append([]Route(nil), c.Routes...)
	r.Sinks = append([]Sink(nil), c.Sinks...)
	for i := range r.Sinks {
		r.Sinks[i].URL = redactURL(r.Sinks[i].URL)
		if k, ok := sinkkind.Lookup(r.Sinks[i].Kind); ok && k.URLUserIsSecret {
			r.Sinks[i].URL = RedactBusURL(c.Sinks[i].URL) // a NATS token is the URL's user part
		}
	}
	b, err := yaml.Marshal(r)
	if err != nil {
		return "config: " + err.Error()
	}
	return string(b)
}

// RedactBusURL hides the secrets of a broker URL: its password, and a NATS token (the user
// part of nats://token@host, which is the secret itself). Other strings pass as redactURL
// leaves them.
func RedactBusURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, has := u.User.Password(); !has && u.User.Username() != "" {
			u.User = url.User("REDACTED")
			return u.String()
		}
	}
	return redactURL(s)
}

// RedactURL hides the password of a URL or a key/value PostgreSQL DSN, for logs.
func RedactURL(s string) string { return redactURL(s) }

// redactURL hides the password of a URL (postgres://u:pw@h/db) and the password=… of a
// key/value PostgreSQL DSN; other strings pass unchanged.
func redactURL(s string) string {
	if s == "" {
		return s
	}
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "REDACTED")
			s = u.String()
		}
	}
	if u, err := url.Parse(s); err == nil && u.RawQuery != "" {
		q := u.Query()
		changed := false
		for k := range q {
			if strings.EqualFold(k, "password") {
				q.Set(k, "REDACTED")
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
			s = u.String()
		}
	}
	fields := strings.Fields(s)
	for i, f := range fields {
		if k, _, ok := strings.Cut(f, "="); ok && strings.EqualFold(k, "password") {
			fields[i] = k + "=REDACTED"
			s = strings.Join(fields, " ")
		}
	}
	return s
}

// TrustedPrefixes parses TrustedProxies: CIDRs ("10.0.0.0/8") or single addresses.
func (r ReceiverConfig) TrustedPrefixes() ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(r.TrustedProxies))
	for i, s := range r.TrustedProxies {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			a, aerr := netip.ParseAddr(strings.TrimSpace(s))
			if aerr != nil {
				return nil, fmt.Errorf("entry %d must be a CIDR such as 10.0.0.0/8 or an IP address", i)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
