package configs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "scribehook.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEmptyFileKeepsDefaults(t *testing.T) {
	for _, body := range []string{"", "# only a comment\n", "---\n", "~\n"} {
		cfg, err := Load(writeFile(t, body), nil)
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if !reflect.DeepEqual(cfg, ServeDefaults()) {
			t.Fatalf("%q: config = %#v", body, cfg)
		}
	}
}

const fullYAML = `
listen: 0.0.0.0:9000
public_url: https://hooks.example.com/base/
read_token_env: MY_READ_TOKEN
service:
  base_url: https://api.example.com
  api_key_env: MY_KEY
  key_header: x-other-key
store: {driver: postgres, dsn: "postgres://u:pw@db/scribehook"}
bus: {driver: nats, url: nats://127.0.0.1:4222, group: replicas, claim_after: 45s}
routes:
  - {name: account, token_env: ACCOUNT_TOKEN, signing_secret_env: ACCOUNT_SECRET}
  - name: partner
    token_env: PARTNER_TOKEN
subtitles: {profile: bbc, formats: [srt, ttml, stl]}
sinks:
  - {name: files, kind: file, dir: /var/out, events: ["*"]}
  - name: captions
    kind: webhook
    url: https://example.com/hook
    secret_env: CAPTIONS_SECRET
    events: ["live.transcript", "job.*"]
    categories: [final_transcripts, partial_transcripts]
    ordered: true
    allow: [10.0.0.0/8, hooks.internal]
    timeout: 3s
  - {name: stream, kind: redisstream, url: "redis://127.0.0.1:6379", events: ["*"]}
  - {name: log, kind: log, events: ["job.*"], timeout: 1m30s}
receiver: {body_limit: 1048576, partitions: 16}
retention:
  interval: 30m
  inbox: 36h
  jobs: 90d
  live: {partial_transcripts: 1d, final_transcripts: 90d}
  dead_letters: forever
reconcile: {enabled: false, after: 5m, every: 1m}
tracing:
  enabled: true
  exporter: otlp-grpc
  endpoint: collector.internal:4317
  insecure: true
  headers_env: OTLP_HEADERS
  sample_ratio: 0.5
captions: {segment: 4s, delay: 8s, window: 2m}
`

// TestLoad loads a file (none, or fullYAML) with an environment and compares the whole
// configuration, and the callback URL it builds.
func TestLoad(t *testing.T) {
	cases := []struct {
		name, body  string // body "": no file
		env         []string
		want        Config
		callbackURL string // of token "tok"
	}{
		{
			name: "defaults with no file",
			// Secrets that share the prefix are not overrides and are no error.
			env: []string{"SCRIBEHOOK_API_KEY=sk", "SCRIBEHOOK_READ_TOKEN=rt", "SCRIBEHOOK_ACCOUNT_TOKEN=at", "HOME=/root", "SCRIBEHOOK_CONFIG=x.yaml"},
			want: Config{
				Listen:       "127.0.0.1:8787",
				PublicURL:    "http://127.0.0.1:8787",
				ReadTokenEnv: "SCRIBEHOOK_READ_TOKEN",
				Service:      ServiceConfig{BaseURL: "http://127.0.0.1:8788", APIKeyEnv: "SCRIBEHOOK_API_KEY", KeyHeader: "x-service-key"},
				Store:        StoreConfig{Driver: "sqlite", DSN: "scribehook.db", Synchronous: "full"},
				Bus: BusConfig{Driver: "gochannel", Topic: "scribehook.inbox", Group: "scribehook", ClaimAfter: 30 * time.Second,
					SweepInterval: 30 * time.Second, SweepGrace: 5 * time.Second, Queue: 10000, MaxLen: 100000},
				Subtitles: SubtitlesConfig{Profile: "netflix-adult", Formats: []string{"srt", "vtt"}, Dir: "artifacts"},
				Sinks:     []Sink{{Name: "files", Kind: "file", Dir: "./out", Events: []string{"*"}, Timeout: 10 * time.Second}},
				Receiver:  ReceiverConfig{BodyLimit: 32 << 20, Partitions: 4, TokenTTL: 7 * 24 * time.Hour, MaxConnsPerIP: 256, AuthFailureBurst: 20, AuthFailureRefill: 3 * time.Second},
				Retention: RetentionConfig{Interval: time.Hour, BatchSize: 500, Inbox: Days(7), Jobs: Forever,
					SinkDelivered: Days(7), DeadLetters: Days(30), Quarantine: Days(30),
					Live: LiveRetention{PartialTranscripts: Days(2), FinalTranscripts: Forever, SpeechEvents: Days(30),
						PreProcessingEvents: Days(30), RealtimeProcessingEvents: Days(30), PostProcessingEvents: Days(30),
						Acknowledgments: Days(2), Errors: Days(30), LifecycleEvents: Days(30)}},
				Reconcile: ReconcileConfig{After: 2 * time.Minute, Every: 30 * time.Second, MaxWait: 30 * time.Minute,
					GiveUp: 72 * time.Hour, AudioFactor: 0.5, QueueStep: 10 * time.Second, CatchUpWindow: 24 * time.Hour},
				// Off, with the exporter and sampling it would start with.
				Tracing:  TracingConfig{Exporter: "otlp-http", SampleRatio: 1, ServiceName: "scribehook"},
				Captions: CaptionsConfig{Segment: 6 * time.Second, Delay: 10 * time.Second},
			},
			callbackURL: "http://127.0.0.1:8787/v1/callbacks/tok",
		},
		{
			name: "full YAML",
			body: fullYAML,
			env: []string{"SCRIBEHOOK_RETENTION_LIVE_ACKNOWLEDGMENTS=12h", "SCRIBEHOOK_RETENTION_QUARANTINE=forever",
				"SCRIBEHOOK_TRACING_SAMPLE_RATIO=0.25"},
			want: Config{
				Listen:       "0.0.0.0:9000",
				PublicURL:    "https://hooks.example.com/base/",
				ReadTokenEnv: "MY_READ_TOKEN",
				Service:      ServiceConfig{BaseURL: "https://api.example.com", APIKeyEnv: "MY_KEY", KeyHeader: "x-other-key"},
				// synchronous keeps its default: a mapping merges key by key.
				Store: StoreConfig{Driver: "postgres", DSN: "postgres://u:pw@db/scribehook", Synchronous: "full"},
				// The other bus keys keep their defaults.
				Bus: BusConfig{Driver: "nats", URL: "nats://127.0.0.1:4222", Topic: "scribehook.inbox", Group: "replicas",
					ClaimAfter: 45 * time.Second, SweepInterval: 30 * time.Second, SweepGrace: 5 * time.Second, Queue: 10000, MaxLen: 100000},
				Routes: []Route{
					{Name: "account", TokenEnv: "ACCOUNT_TOKEN", SigningSecretEnv: "ACCOUNT_SECRET"},
					{Name: "partner", TokenEnv: "PARTNER_TOKEN"},
				},
				Subtitles: SubtitlesConfig{Profile: "bbc", Formats: []string{"srt", "ttml", "stl"}, Dir: "artifacts"},
				Sinks: []Sink{
					{Name: "files", Kind: "file", Dir: "/var/out", Events: []string{"*"}, Timeout: 10 * time.Second},
					{Name: "captions", Kind: "webhook", URL: "https://example.com/hook", SecretEnv: "CAPTIONS_SECRET",
						Events: []string{"live.transcript", "job.*"}, Categories: []string{"final_transcripts", "partial_transcripts"},
						Ordered: true, Allow: []string{"10.0.0.0/8", "hooks.internal"}, Timeout: 3 * time.Second},
					{Name: "stream", Kind: "redisstream", URL: "redis://127.0.0.1:6379", Topic: "scribehook.events", Events: []string{"*"}, Timeout: 10 * time.Second},
					{Name: "log", Kind: "log", Events: []string{"job.*"}, Timeout: 90 * time.Second},
				},
				Receiver: ReceiverConfig{BodyLimit: 1 << 20, Partitions: 16, TokenTTL: 7 * 24 * time.Hour, MaxConnsPerIP: 256, AuthFailureBurst: 20, AuthFailureRefill: 3 * time.Second},
				// Keys not given keep their defaults.
				Retention: RetentionConfig{Interval: 30 * time.Minute, BatchSize: 500, Inbox: Keep(36 * time.Hour), Jobs: Days(90),
					SinkDelivered: Days(7), DeadLetters: Forever, Quarantine: Forever,
					Live: LiveRetention{PartialTranscripts: Days(1), FinalTranscripts: Days(90), SpeechEvents: Days(30),
						PreProcessingEvents: Days(30), RealtimeProcessingEvents: Days(30), PostProcessingEvents: Days(30),
						Acknowledgments: Keep(12 * time.Hour), Errors: Days(30), LifecycleEvents: Days(30)}},
				Reconcile: ReconcileConfig{Enabled: new(false), After: 5 * time.Minute, Every: time.Minute, MaxWait: 30 * time.Minute,
					GiveUp: 72 * time.Hour, AudioFactor: 0.5, QueueStep: 10 * time.Second, CatchUpWindow: 24 * time.Hour},
				// service_name keeps its default; sample_ratio comes from the environment.
				Tracing: TracingConfig{Enabled: true, Exporter: "otlp-grpc", Endpoint: "collector.internal:4317", Insecure: true,
					HeadersEnv: "OTLP_HEADERS", SampleRatio: 0.25, ServiceName: "scribehook"},
				Captions: CaptionsConfig{Segment: 4 * time.Second, Delay: 8 * time.Second, Window: 2 * time.Minute},
			},
			callbackURL: "https://hooks.example.com/base/v1/callbacks/tok",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := ""
			if tc.body != "" {
				path = writeFile(t, tc.body)
			}
			cfg, err := Load(path, tc.env)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if !reflect.DeepEqual(cfg, tc.want) {
				t.Fatalf("config =\n%#v\nwant\n%#v", cfg, tc.want)
			}
			if got := cfg.CallbackURL("tok"); got != tc.callbackURL {
				t.Fatalf("callback url = %s, want %s", got, tc.callbackURL)
			}
		})
	}
}

func TestExampleFileLoads(t *testing.T) {
	cfg, err := Load("scribehook.example.yaml", nil)
	if err != nil {
		t.Fatalf("example: %v", err)
	}
	if len(cfg.Routes) != 1 || cfg.Routes[0].Name != "account" || len(cfg.Sinks) != 2 || cfg.Sinks[1].Categories[0] != "final_transcripts" {
		t.Fatalf("example = %+v", cfg)
	}
	// The example documents the defaults: the keys it shares with Default hold the same values.
	def := ServeDefaults()
	if cfg.Listen != def.Listen || cfg.PublicURL != def.PublicURL || cfg.ReadTokenEnv != def.ReadTokenEnv ||
		cfg.Service != def.Service || cfg.Store != def.Store || cfg.Bus != def.Bus || cfg.Debug != def.Debug ||
		!reflect.DeepEqual(cfg.Subtitles, def.Subtitles) || !reflect.DeepEqual(cfg.Receiver, def.Receiver) || cfg.Retention != def.Retention || cfg.Tracing != def.Tracing ||
		!reflect.DeepEqual(cfg.Sinks[0], def.Sinks[0]) {
		t.Fatalf("example drifted from the defaults:\n%s", cfg)
	}
}

func TestUnknownKeysNameTheirPathAndLine(t *testing.T) {
	cases := []struct{ body, want string }{
		{"listen: 127.0.0.1:1\npublic_url: http://x\n\n# c\nservice:\n  base_url: http://s\nstroe: {driver: sqlite}\n",
			`config: line 7: unknown key "stroe" (did you mean "store"?)`},
		{"store:\n  drvier: sqlite\n", `config: line 2: unknown key "store.drvier" (did you mean "store.driver"?)`},
		{"routes:\n  - name: a\n    token_evn: X\n", `config: line 3: unknown key "routes[0].token_evn" (did you mean "routes[0].token_env"?)`},
		{"service:\n  api_key: sk-123\n", `config: line 2: unknown key "service.api_key" (secrets are not read from the file: set "service.api_key_env" to the name of an environment variable that holds it)`},
		{"color: blue\n", `config: line 1: unknown key "color"`},
		{"listen: a:1\nlisten: b:2\n", `config: line 2: key "listen" is given twice (first on line 1)`},
	}
	for _, tc := range cases {
		_, err := Load(writeFile(t, tc.body), nil)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.body, err, tc.want)
		}
	}
}

func TestWrongTypesNameTheKey(t *testing.T) {
	body := "listen: [a, b]\nreceiver:\n  partitions: four\n  body_limit: 1e3x\nsinks:\n  - name: x\n    ordered: maybe\n    timeout: soon\n    events: \"*\"\nstore: sqlite\n"
	_, err := Load(writeFile(t, body), nil)
	want := []string{
		`config: line 1: listen must be a string (got a list)`,
		`config: line 3: receiver.partitions must be an integer (got "four")`,
		`config: line 4: receiver.body_limit must be an integer (got "1e3x")`,
		`config: line 7: sinks[0].ordered must be true or false (got "maybe")`,
		`config: line 8: sinks[0].timeout must be a duration such as 10s or 1m30s (got "soon")`,
		`config: line 9: sinks[0].events must be a list (got "*")`,
		`config: line 10: store must be a mapping of keys (got "sqlite")`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Fatalf("err =\n%v\nwant\n%s", err, strings.Join(want, "\n"))
	}
}

func TestSyntaxErrorAndMissingFile(t *testing.T) {
	if _, err := Load(writeFile(t, "listen: [unclosed\n"), nil); err == nil || !strings.HasPrefix(err.Error(), "config: yaml: ") {
		t.Fatalf("syntax: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none.yaml"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := Load(writeFile(t, "listen: a:1\n---\nlisten: b:2\n"), nil); err == nil || !strings.Contains(err.Error(), "several YAML documents") {
		t.Fatalf("documents: %v", err)
	}
}

func TestEnvironmentOverrides(t *testing.T) {
	file := writeFile(t, "routes:\n  - {name: account, token_env: ACCOUNT_TOKEN}\nservice: {base_url: http://from-file}\n")
	env := []string{
		"SCRIBEHOOK_LISTEN=0.0.0.0:1",
		"SCRIBEHOOK_SERVICE_BASE_URL=http://first",
		"SCRIBEHOOK_SERVICE_BASE_URL=http://svc:8788", // a later entry wins
		"SCRIBEHOOK_STORE_DSN=/data/s.db",
		"SCRIBEHOOK_STORE_SYNCHRONOUS=normal",
		"SCRIBEHOOK_ROUTES_0_TOKEN_ENV=OTHER_TOKEN",
		"SCRIBEHOOK_ROUTES_1_NAME=partner", // one past the end appends
		"SCRIBEHOOK_ROUTES_1_TOKEN_ENV=PARTNER_TOKEN",
		"SCRIBEHOOK_SUBTITLES_FORMATS= srt, ttml ,",
		"SCRIBEHOOK_SINKS_0_EVENTS=job.*,live.*",
		"SCRIBEHOOK_SINKS_0_ORDERED=true",
		"SCRIBEHOOK_SINKS_0_TIMEOUT=2s",
		"SCRIBEHOOK_RECEIVER_PARTITIONS=8",
		"SCRIBEHOOK_BUS_URL=", // empty counts as unset
		"SCRIBEHOOK_API_KEY=sk-not-a-key-path",
		"SCRIBEHOOK_READ_TOKEN=not-read-token-env",
	}
	cfg, err := Load(file, env)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if cfg.Listen != "0.0.0.0:1" || cfg.Service.BaseURL != "http://svc:8788" || cfg.Store.DSN != "/data/s.db" ||
		cfg.Store.Synchronous != "normal" || cfg.Receiver.Partitions != 8 || cfg.Bus.URL != "" {
		t.Fatalf("scalars = %+v", cfg)
	}
	if cfg.Service.APIKeyEnv != "SCRIBEHOOK_API_KEY" || cfg.ReadTokenEnv != "SCRIBEHOOK_READ_TOKEN" {
		t.Fatalf("secrets were taken as overrides: %+v", cfg)
	}
	wantRoutes := []Route{{Name: "account", TokenEnv: "OTHER_TOKEN"}, {Name: "partner", TokenEnv: "PARTNER_TOKEN"}}
	if !reflect.DeepEqual(cfg.Routes, wantRoutes) {
		t.Fatalf("routes = %+v", cfg.Routes)
	}
	if !slices.Equal(cfg.Subtitles.Formats, []string{"srt", "ttml"}) || !slices.Equal(cfg.Sinks[0].Events, []string{"job.*", "live.*"}) ||
		!cfg.Sinks[0].Ordered || cfg.Sinks[0].Timeout != 2*time.Second {
		t.Fatalf("lists = %v %+v", cfg.Subtitles.Formats, cfg.Sinks[0])
	}
}

func TestEnvironmentOverrideErrors(t *testing.T) {
	_, err := Load("", []string{"SCRIBEHOOK_RECEIVER_PARTITIONS=many", "SCRIBEHOOK_ROUTES_2_NAME=x", "SCRIBEHOOK_SINKS_0_ORDERED=yes please"})
	want := `config: SCRIBEHOOK_RECEIVER_PARTITIONS: receiver.partitions must be an integer (got "many"); ` +
		`SCRIBEHOOK_ROUTES_2_NAME: index 2 is past the end of routes (0 elements): number the elements from 0 without gaps; ` +
		`SCRIBEHOOK_SINKS_0_ORDERED: sinks[0].ordered must be true or false (got "yes please")`
	if err == nil || err.Error() != want {
		t.Fatalf("err =\n%v\nwant\n%s", err, want)
	}
}

func TestEnvName(t *testing.T) {
	checkEach(t, "EnvName", EnvName, map[string]string{
		"listen":              "SCRIBEHOOK_LISTEN",
		"service.base_url":    "SCRIBEHOOK_SERVICE_BASE_URL",
		"routes[0].token_env": "SCRIBEHOOK_ROUTES_0_TOKEN_ENV",
		"sinks[12].events":    "SCRIBEHOOK_SINKS_12_EVENTS",
	})
}

// checkEach checks f, named name, on every input of cases against its wanted result.
func checkEach(t *testing.T, name string, f func(string) string, cases map[string]string) {
	t.Helper()
	for in, want := range cases {
		if got := f(in); got != want {
			t.Errorf("%s(%s) = %s, want %s", name, in, got, want)
		}
	}
}

// TestValidationSentences breaks keys of the defaults and checks every sentence Validate says
// of them, in order, and the error that joins them.
func TestValidationSentences(t *testing.T) {
	cases := []struct {
		name   string
		breaks func(c *Config)
		want   []string
		secret string // must not be quoted
	}{
		{
			name: "every section",
			breaks: func(c *Config) {
				c.Listen = "8787"
				c.PublicURL = "ftp://x"
				c.ReadTokenEnv = ""
				c.Service.BaseURL = "127.0.0.1:8788"
				c.Service.APIKeyEnv = "MY-KEY"
				c.Service.KeyHeader = "x key"
				c.Store = StoreConfig{Driver: "mysql", DSN: ""}
				c.Bus.Driver = "redisstream"
				c.Routes = []Route{{Name: "", TokenEnv: "A"}, {Name: "a", TokenEnv: ""}, {Name: "a", TokenEnv: "B"}, {Name: "job", TokenEnv: "C"}}
				c.Subtitles = SubtitlesConfig{Profile: "cinema", Formats: []string{"srt", "docx"}}
				c.Sinks = []Sink{
					{Name: "files", Kind: "file", Dir: "./out", Events: []string{"*"}, Timeout: time.Second},
					{Name: "files", Kind: "email", Events: nil, Timeout: 0, Concurrency: -1},
					{Name: "hook", Kind: "webhook", URL: "not a url", Events: []string{"", "live.[x", "job.succeded", "jobs.*"}, Categories: []string{"final_transcripts", "finals"}, Kinds: []string{"live", "recorded"}, Allow: []string{"10.0.0.0/8", "http://x"}, Timeout: time.Second},
					{Name: "", Kind: "nats", Events: []string{"*"}, Timeout: time.Second},
				}
				c.Receiver = ReceiverConfig{BodyLimit: 0, Partitions: 1000, TokenTTL: time.Minute, MaxConnsPerIP: -5,
					AuthFailureBurst: -2, AuthFailureRefill: time.Millisecond, TrustedProxies: []string{"10.0.0.0/8", "proxy.internal"}}
			},
			want: []string{
				`listen must be host:port, e.g. 127.0.0.1:8787 (got "8787")`,
				`public_url must be an absolute http or https URL (got "ftp://x")`,
				`read_token_env is required: the name of an environment variable`,
				`service.base_url must be an absolute http or https URL (got "127.0.0.1:8788")`,
				`service.api_key_env must be the name of an environment variable, letters, digits and _ (got "MY-KEY")`,
				`service.key_header must be an HTTP header name (got "x key")`,
				`store.driver must be sqlite or postgres (got "mysql")`,
				`store.dsn must name the database: a SQLite file path or a PostgreSQL URL (configs.Default leaves it empty; a program with a store of its own gives it with scribehook.WithStore)`,
				`bus.url is required when bus.driver is redisstream`,
				`routes[0].name must not be empty`,
				`routes[1].token_env is required: the name of an environment variable`,
				`routes[2].name must be unique ("a" is also routes[1])`,
				`routes[3].name must not be "job": the name is reserved for per-job tokens`,
				`subtitles.profile must be netflix-adult, netflix-kids or bbc (got "cinema")`,
				`subtitles.formats[1] must be srt, vtt, ttml, ssa, ass or stl (got "docx")`,
				`subtitles.dir must name a directory when subtitles.formats is not empty`,
				`sinks[1].name must be unique ("files" is also sinks[0])`,
				`sinks[1].kind must be file, webhook, redisstream, nats or log (got "email")`,
				`sinks[1].concurrency must not be negative (got -1; 0 is the default)`,
				`sinks[1].events must list at least one event glob, e.g. "*"`,
				`sinks[1].timeout must be a positive duration (got 0s)`,
				`sinks[2].url must be an absolute http or https URL (got "not a url")`,
				`sinks[2].events[0] must not be empty`,
				`sinks[2].events[1] may use only * as a wildcard (got "live.[x")`,
				`sinks[2].events[2] must be an event type or a glob matching one: job.created, job.succeeded, job.failed, subtitles.ready, job.overdue, job.reconciled, sink.disabled, sink.enabled, inbox.failed or live.<message type>, with * as a wildcard (got "job.succeded"; did you mean "job.succeeded"?)`,
				`sinks[2].events[3] must be an event type or a glob matching one: job.created, job.succeeded, job.failed, subtitles.ready, job.overdue, job.reconciled, sink.disabled, sink.enabled, inbox.failed or live.<message type>, with * as a wildcard (got "jobs.*")`,
				`sinks[2].categories[1] must be one of partial_transcripts, final_transcripts, speech_events, pre_processing_events, realtime_processing_events, post_processing_events, acknowledgments, errors, lifecycle_events (got "finals")`,
				`sinks[2].kinds[1] must be pre-recorded or live (got "recorded")`,
				`sinks[2].allow[1] must be a host name, an IP address or a CIDR range (got "http://x")`,
				`sinks[3].name must not be empty`,
				`sinks[3].url is required for a nats sink`,
				`receiver.body_limit must be a positive number of bytes (got 0)`,
				`receiver.partitions must be between 1 and 256 (got 1000)`,
				`receiver.token_ttl must be at least 1h (got 1m0s)`,
				`receiver.max_conns_per_ip must be a positive number of connections, or -1 for no bound (got -5)`,
				`receiver.auth_failure_burst must be a positive number of failed authentications, or -1 for no limit (got -2)`,
				`receiver.auth_failure_refill must be between 100ms and 24h (got 1ms)`,
				`receiver.trusted_proxies entry 1 must be a CIDR such as 10.0.0.0/8 or an IP address`,
			},
		},
		{
			name: "retention keys",
			breaks: func(c *Config) {
				c.Retention.Interval, c.Retention.BatchSize = 30*time.Second, 0
				c.Retention.Inbox, c.Retention.Jobs, c.Retention.Quarantine = Keep(12*time.Hour), Days(30), Keep(-time.Hour)
				c.Retention.Live.Acknowledgments, c.Retention.Live.Errors = Keep(30*time.Minute), Days(31)
			},
			want: []string{
				`retention.interval must be at least 1m, or 0 to turn the background pruner off (got 30s)`,
				`retention.batch_size must be between 1 and 100000 (got 0)`,
				`retention.inbox must be at least 1d, or forever (got 12h): a redelivery of a pruned row is stored and applied again, so rows must outlast the service's retries`,
				`retention.live.acknowledgments must be at least 1h, or forever (got 30m)`,
				`retention.quarantine must not be negative (got -1h)`,
				`retention.live.final_transcripts must not be longer than retention.jobs (30d): a session's messages go with its record (got forever)`,
				`retention.live.errors must not be longer than retention.jobs (30d): a session's messages go with its record (got 31d)`,
			},
		},
		{
			name: "reconcile keys",
			breaks: func(c *Config) {
				c.Reconcile = ReconcileConfig{After: 10 * time.Minute, Every: 0, MaxWait: 5 * time.Minute, GiveUp: time.Second,
					AudioFactor: -1, QueueStep: -time.Second, CatchUpWindow: time.Second}
			},
			want: []string{
				`reconcile.every must be a duration of at least 1s (got 0s)`,
				`reconcile.give_up must be a duration of at least 1m0s (got 1s)`,
				`reconcile.queue_step must be a duration of at least 0s (got -1s)`,
				`reconcile.catch_up_window must be a duration of at least 1m0s (got 1s)`,
				`reconcile.max_wait must be at least reconcile.after (10m0s; got 5m0s)`,
				`reconcile.audio_factor must be a number from 0 to 100 (got -1)`,
			},
		},
		{
			name: "captions keys",
			breaks: func(c *Config) {
				c.Captions = CaptionsConfig{Segment: 500 * time.Millisecond, Delay: -time.Second, Window: time.Second}
			},
			want: []string{
				`captions.segment must be a duration from 1s to 1m, whole milliseconds (got 500ms)`,
				`captions.delay must be a duration from 0s to 1h (got -1s)`,
				`captions.window must be 0 (every segment) or at least three segments, 1.5s (got 1s)`,
			},
		},
		{
			name: "bus keys",
			breaks: func(c *Config) {
				c.Bus = BusConfig{Driver: "nats", URL: "redis://:pw@cache:6379", Topic: "a..b", Group: "my group", Consumer: "x/y",
					ClaimAfter: 500 * time.Millisecond, SweepInterval: 0, SweepGrace: -time.Second, Queue: 0, MaxLen: -1}
			},
			want: []string{
				`bus.url must be a nats URL such as nats://[user:password@]host:4222 (or tls://)`,
				`bus.topic must be a NATS subject, dot-separated tokens none of them empty (got "a..b")`,
				`bus.group must be letters, digits, '-' and '_' (got "my group")`,
				`bus.consumer must be letters, digits, '-' and '_' (got "x/y")`,
				`bus.claim_after must be a duration of at least 1s (got 500ms)`,
				`bus.sweep_interval must be a duration of at least 1s (got 0s)`,
				`bus.sweep_grace must not be negative (got -1s)`,
				`bus.queue must be between 1 and 10000000 (got 0)`,
				`bus.max_len must not be negative; 0 leaves the stream unbounded (got -1)`,
			},
			secret: "pw", // the URL's password
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ServeDefaults()
			tc.breaks(&cfg)
			err := cfg.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v", err)
			}
			if got := ve.Sentences(); !slices.Equal(got, tc.want) {
				t.Fatalf("sentences:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if want := "config: " + strings.Join(tc.want, "; "); err.Error() != want {
				t.Fatalf("error = %s\nwant %s", err, want)
			}
			if tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
				t.Errorf("the error quotes %q: %s", tc.secret, err)
			}
		})
	}
	if err := ServeDefaults().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
}

func TestLoadValidates(t *testing.T) {
	_, err := Load(writeFile(t, "bus: {driver: kafka}\n"), []string{"SCRIBEHOOK_STORE_SYNCHRONOUS=off"})
	want := `config: store.synchronous must be full or normal (got "off"); bus.driver must be gochannel, redisstream or nats (got "kafka")`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v", err)
	}
}

func TestSecrets(t *testing.T) {
	cfg := ServeDefaults()
	cfg.Routes = []Route{
		{Name: "account", TokenEnv: "ACCOUNT_TOKEN", SigningSecretEnv: "ACCOUNT_SECRET"},
		{Name: "partner", TokenEnv: "PARTNER_TOKEN"},
	}
	cfg.Sinks = append(cfg.Sinks, Sink{Name: "hook", Kind: "webhook", URL: "https://x", SecretEnv: "HOOK_SECRET", Events: []string{"*"}, Timeout: time.Second})
	secretFile := filepath.Join(t.TempDir(), "partner")
	if err := os.WriteFile(secretFile, []byte("partner-tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"SCRIBEHOOK_API_KEY=sk-live-123",
		"ACCOUNT_TOKEN=acc-tok",
		"ACCOUNT_SECRET=whsec_old, whsec_new  whsec_newer",
		"PARTNER_TOKEN_FILE=" + secretFile,
		"HOOK_SECRET=whsec_hook",
	}
	s, err := cfg.Secrets(env)
	if err != nil {
		t.Fatalf("secrets: %v", err)
	}
	if s.APIKey != "sk-live-123" || s.ReadToken != "" || s.Sinks["hook"] != "whsec_hook" {
		t.Fatalf("secrets = %+v", s)
	}
	if r := s.Routes["account"]; r.Token != "acc-tok" || !slices.Equal(r.SigningSecrets, []string{"whsec_old", "whsec_new", "whsec_newer"}) {
		t.Fatalf("account = %#v", r.SigningSecrets)
	}
	if r := s.Routes["partner"]; r.Token != "partner-tok" || r.SigningSecrets != nil {
		t.Fatalf("partner = %q", r.Token)
	}
	// Nothing prints a value.
	j, _ := json.Marshal(s)
	for _, out := range []string{s.String(), fmt.Sprintf("%v", s), fmt.Sprintf("%+v", s), fmt.Sprintf("%#v", s), fmt.Sprint(s.Routes), string(j)} {
		for _, secret := range []string{"sk-live-123", "acc-tok", "whsec_old", "partner-tok", "whsec_hook"} {
			if strings.Contains(out, secret) {
				t.Fatalf("%q prints %s", out, secret)
			}
		}
	}
	if want := "api_key=set read_token=unset route.account=token:set,signing_secrets:3 route.partner=token:set,signing_secrets:0 sink.hook=set"; s.String() != want {
		t.Fatalf("String = %s", s)
	}
}

func TestSecretsErrorsNameTheVariable(t *testing.T) {
	cfg := ServeDefaults()
	cfg.Routes = []Route{{Name: "account", TokenEnv: "ACCOUNT_TOKEN", SigningSecretEnv: "ACCOUNT_SECRET"}, {Name: "b", TokenEnv: "B_TOKEN"}}
	_, err := cfg.Secrets([]string{"B_TOKEN=x", "B_TOKEN_FILE=/etc/b"})
	want := "route account: environment variable ACCOUNT_TOKEN is empty: set it to the route's callback token\n" +
		"route account: environment variable ACCOUNT_SECRET is empty: set it to the signing secret, or remove signing_secret_env\n" +
		"both B_TOKEN and B_TOKEN_FILE are set: keep one\n" +
		"route b: environment variable B_TOKEN is empty: set it to the route's callback token"
	if err == nil || err.Error() != want {
		t.Fatalf("err =\n%v\nwant\n%s", err, want)
	}
	if _, err := cfg.Secrets([]string{"ACCOUNT_TOKEN_FILE=/nonexistent/x", "ACCOUNT_SECRET=s", "B_TOKEN=b"}); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "read ACCOUNT_TOKEN_FILE") {
		t.Fatalf("file err = %v", err)
	}
}

func TestStringHidesPasswords(t *testing.T) {
	cfg := ServeDefaults()
	cfg.Store = StoreConfig{Driver: "postgres", DSN: "postgres://app:hunter2@db:5432/s?sslmode=disable"}
	cfg.Bus.Driver, cfg.Bus.URL = "redisstream", "redis://:s3cret@cache:6379/0"
	cfg.Sinks = append(cfg.Sinks, Sink{Name: "n", Kind: "nats", URL: "nats://u:natspw@n:4222", Events: []string{"*"}},
		Sink{Name: "t", Kind: "nats", URL: "nats://natstoken@n:4222", Events: []string{"*"}})
	out := cfg.String()
	for _, secret := range []string{"hunter2", "s3cret", "natspw", "natstoken"} {
		if strings.Contains(out, secret) {
			t.Fatalf("String prints %s:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "postgres://app:REDACTED@db:5432/s?sslmode=disable") || !strings.Contains(out, "timeout: 10s") {
		t.Fatalf("String =\n%s", out)
	}
	if got := redactURL("host=db user=app password=pw dbname=s"); got != "host=db user=app password=REDACTED dbname=s" {
		t.Fatalf("kv dsn = %s", got)
	}
	if got := redactURL("postgres://db/s?password=pw"); strings.Contains(got, "pw") && !strings.Contains(got, "REDACTED") {
		t.Fatalf("query dsn = %s", got)
	}
}

// TestBusKeys: every bus key is overridable from the environment (TestValidationSentences
// checks what each accepts), and a bus URL is printed without its password or token.
func TestBusKeys(t *testing.T) {
	cfg, err := Load("", []string{
		"SCRIBEHOOK_BUS_DRIVER=redisstream", "SCRIBEHOOK_BUS_URL=redis://127.0.0.1:6379/0", "SCRIBEHOOK_BUS_TOPIC=t.inbox",
		"SCRIBEHOOK_BUS_GROUP=g", "SCRIBEHOOK_BUS_CONSUMER=replica-1", "SCRIBEHOOK_BUS_CLAIM_AFTER=10s",
		"SCRIBEHOOK_BUS_SWEEP_INTERVAL=1m", "SCRIBEHOOK_BUS_SWEEP_GRACE=2s", "SCRIBEHOOK_BUS_QUEUE=500", "SCRIBEHOOK_BUS_MAX_LEN=0",
	})
	if err != nil {
		t.Fatal(err)
	}
	wantBus := BusConfig{Driver: "redisstream", URL: "redis://127.0.0.1:6379/0", Topic: "t.inbox", Group: "g", Consumer: "replica-1",
		ClaimAfter: 10 * time.Second, SweepInterval: time.Minute, SweepGrace: 2 * time.Second, Queue: 500, MaxLen: 0}
	if cfg.Bus != wantBus {
		t.Fatalf("bus = %+v", cfg.Bus)
	}
	// A NATS token is the user part of the URL: hidden like a password.
	checkEach(t, "RedactBusURL", RedactBusURL, map[string]string{
		"nats://s3cr3t-token@n:4222":   "nats://REDACTED@n:4222",
		"nats://u:s3cr3t@n:4222":       "nats://u:REDACTED@n:4222",
		"redis://:s3cr3t@cache:6379/0": "redis://:REDACTED@cache:6379/0",
		"redis://cache:6379/0":         "redis://cache:6379/0",
	})
}

// TestDebugListen checks the profiling endpoint's address: off when empty, loopback only
// unless debug.allow_remote, never the receiver's port; each refusal says why.
func TestDebugListen(t *testing.T) {
	const local = `must be a loopback address such as 127.0.0.1:6060 unless debug.allow_remote is true: profiles have no authentication (got %q)`
	cases := []struct {
		listen string
		remote bool
		want   string // the debug.listen sentence; empty: valid
	}{
		{listen: ""},
		{listen: "127.0.0.1:6060"},
		{listen: "127.0.0.1:0"},
		{listen: "[::1]:6060"},
		{listen: "localhost:6060"},
		{listen: "127.3.2.1:6060"},
		{listen: ":6060", want: local},
		{listen: "0.0.0.0:6060", want: local},
		{listen: "[::]:6060", want: local},
		{listen: "10.0.0.5:6060", want: local},
		{listen: "debug.internal:6060", want: local},
		{listen: "0.0.0.0:6060", remote: true},
		{listen: "debug.internal:6060", remote: true},
		{listen: "6060", want: `must be host:port, e.g. 127.0.0.1:6060, or empty for no profiling endpoint (got %q)`},
		{listen: "127.0.0.1:65536", want: `must be host:port, e.g. 127.0.0.1:6060, or empty for no profiling endpoint (got %q)`},
		{listen: "127.0.0.1:8787", want: `must not use the port of listen (127.0.0.1:8787): profiles are never served where callbacks are (got %q)`},
		{listen: "[::1]:8787", want: `must not use the port of listen (127.0.0.1:8787): profiles are never served where callbacks are (got %q)`},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s remote=%t", tc.listen, tc.remote), func(t *testing.T) {
			cfg := ServeDefaults()
			cfg.Debug = DebugConfig{Listen: tc.listen, AllowRemote: tc.remote}
			err := cfg.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			want := "config: debug.listen " + fmt.Sprintf(tc.want, tc.listen)
			if err == nil || err.Error() != want {
				t.Fatalf("err = %v\nwant %s", err, want)
			}
		})
	}
	// Off by default, and settable from the environment like every key.
	if d := ServeDefaults().Debug; d != (DebugConfig{}) {
		t.Fatalf("default debug = %+v", d)
	}
	cfg, err := Load("", []string{"SCRIBEHOOK_DEBUG_LISTEN=127.0.0.1:6061"})
	if err != nil || cfg.Debug.Listen != "127.0.0.1:6061" {
		t.Fatalf("debug from the environment = %+v, %v", cfg.Debug, err)
	}
}

// A sink of the file whose events hold a misspelt type is refused by Load, naming the entry,
// rather than only when a kit is built from it.
func TestLoadRefusesUnknownEventTypes(t *testing.T) {
	_, err := Load(writeFile(t, "sinks:\n  - {name: hook, kind: log, events: [\"live.*\", \"job.succeded\"]}\n"), nil)
	if err == nil || !strings.Contains(err.Error(), `sinks[0].events[1] must be an event type or a glob matching one`) ||
		!strings.Contains(err.Error(), `did you mean "job.succeeded"?`) {
		t.Fatalf("err = %v", err)
	}
}

// Default, a library's, names nothing that writes: no database file (store.dsn is the
// program's to give, and the only key Validate then refuses), no sink, no subtitles.
// ServeDefaults is Default with the binary's database, artifacts and file sink.
func TestDefaultWritesNothingServeDefaultsDo(t *testing.T) {
	d := Default()
	if d.Store.DSN != "" || len(d.Sinks) != 0 || d.Subtitles.Dir != "" || len(d.Subtitles.Formats) != 0 {
		t.Errorf("Default names something that writes: store.dsn %q, %d sinks, subtitles %+v", d.Store.DSN, len(d.Sinks), d.Subtitles)
	}
	var ve *ValidationError
	if err := d.Validate(); !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Key != "store.dsn" {
		t.Errorf("Default().Validate() = %v, want store.dsn alone", err)
	}
	d.Store.DSN = "kit.db"
	if err := d.Validate(); err != nil {
		t.Errorf("Default with store.dsn: %v", err)
	}

	s := ServeDefaults()
	if s.Store.DSN != DefaultStoreDSN || s.Subtitles.Dir != DefaultArtifactsDir || !slices.Equal(s.Subtitles.Formats, []string{"srt", "vtt"}) ||
		len(s.Sinks) != 1 || s.Sinks[0].Dir != DefaultSinkDir {
		t.Errorf("ServeDefaults = %s", s)
	}
	s.Store.DSN, s.Subtitles, s.Sinks = "kit.db", Default().Subtitles, nil
	if !reflect.DeepEqual(s, d) {
		t.Errorf("ServeDefaults differs from Default in more than the store, subtitles and sinks:\n%s\n%s", s, d)
	}
}

// LoadOnto(Default(), …) applies a file and the environment over the library's defaults.
func TestLoadOntoDefault(t *testing.T) {
	cfg, err := LoadOnto(Default(), writeFile(t, "store: {dsn: kit.db}\n"), []string{"SCRIBEHOOK_LISTEN=127.0.0.1:9999"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store.DSN != "kit.db" || cfg.Listen != "127.0.0.1:9999" || len(cfg.Sinks) != 0 || len(cfg.Subtitles.Formats) != 0 {
		t.Errorf("LoadOnto(Default()) = %s", cfg)
	}
	if _, err := LoadOnto(Default(), "", nil); err == nil || !strings.Contains(err.Error(), "store.dsn must name the database") {
		t.Errorf("LoadOnto(Default()) without store.dsn = %v", err)
	}
}

// reconcile.enabled is optional (absent: on with a service key) and an environment variable
// sets it either way.
func TestReconcileEnabled(t *testing.T) {
	for _, tc := range []struct {
		env           []string
		withKey, none bool
	}{
		{nil, true, false},
		{[]string{"SCRIBEHOOK_RECONCILE_ENABLED=false"}, false, false},
		{[]string{"SCRIBEHOOK_RECONCILE_ENABLED=true"}, true, false},
	} {
		cfg, err := Load("", tc.env)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Reconcile.On(true); got != tc.withKey {
			t.Errorf("%v: on with a key = %v", tc.env, got)
		}
		if got := cfg.Reconcile.On(false); got != tc.none {
			t.Errorf("%v: on without a key = %v", tc.env, got)
		}
	}
	if _, err := Load("", []string{"SCRIBEHOOK_RECONCILE_ENABLED=maybe"}); err == nil || !strings.Contains(err.Error(), "SCRIBEHOOK_RECONCILE_ENABLED") {
		t.Errorf("a bad value: %v", err)
	}
}
