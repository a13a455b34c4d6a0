package configs

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/sinks/sinkexpr"
	"github.com/scribehook/scribehook/sinks/sinkkind"
)

// Problem is one violated rule: the key at fault and the rule with the bad value.
type Problem struct {
	Key  string // dotted path, e.g. sinks[1].url
	Rule string // e.g. `must be an absolute http or https URL (got "ftp://x")`
}

// Sentence is the key followed by the rule, as shown to users.
func (p Problem) Sentence() string { return p.Key + " " + p.Rule }

// ValidationError holds every problem of a configuration, so that all are fixed in one go.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	return "config: " + strings.Join(e.Sentences(), "; ")
}

// Sentences gives one sentence per problem.
func (e *ValidationError) Sentences() []string {
	out := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p.Sentence()
	}
	return out
}

// Allowed values of the enumerated keys. The kinds of sinks[].kind are those the program links,
// sinkkind.Names: each kind's package registers it.
var (
	StoreDrivers    = []string{"sqlite", "postgres"}
	SyncModes       = []string{"full", "normal"}
	BusDrivers      = []string{"gochannel", "redisstream", "nats"}
	SubtitleFormats = []string{"srt", "vtt", "ttml", "ssa", "ass", "stl"}
	Profiles        = []string{"netflix-adult", "netflix-kids", "bbc"}
)

// StoreDSNRule is what Validate says of an empty store.dsn, which Default leaves to the
// program.
const StoreDSNRule = "must name the database: a SQLite file path or a PostgreSQL URL (configs.Default leaves it empty; a program with a store of its own gives it with scribehook.WithStore)"

// RouteJob is the route name of per-job tokens in the store; a static route may not take it.
const RouteJob = "job"

// maxPartitions bounds receiver.partitions: each is a goroutine and a queue.
const maxPartitions = 256

var (
	envNameRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// Validate checks every key and returns a *ValidationError listing every problem, or nil.
func (c Config) Validate() error {
	var v validator
	if _, port, err := net.SplitHostPort(c.Listen); err != nil || !validPort(port) {
		v.add("listen", "must be host:port, e.g. 127.0.0.1:8787 (got %q)", c.Listen)
	}
	v.httpURL("public_url", c.PublicURL)
	v.envName("read_token_env", c.ReadTokenEnv, true)

	v.httpURL("service.base_url", c.Service.BaseURL)
	v.envName("service.api_key_env", c.Service.APIKeyEnv, true)
	if !headerNameRE.MatchString(c.Service.KeyHeader) {
		v.add("service.key_header", "must be an HTTP header name (got %q)", c.Service.KeyHeader)
	}

	v.oneOf("store.driver", c.Store.Driver, StoreDrivers)
	if c.Store.DSN == "" {
		v.add("store.dsn", "%s", StoreDSNRule)
	}
	if c.Store.Driver == "sqlite" {
		v.oneOf("store.synchronous", c.Store.Synchronous, SyncModes)
	}

	v.bus(c.Bus)
	v.reconcile(c.Reconcile)
	v.captions(c.Captions)

	routes := map[string]int{}
	for i, r := range c.Routes {
		p := fmt.Sprintf("routes[%d]", i)
		if r.Name == RouteJob {
			v.add(p+".name", "must not be %q: the name is reserved for per-job tokens", RouteJob)
		} else {
			v.name("routes", i, r.Name, routes)
		}
		v.envName(p+".token_env", r.TokenEnv, true)
		v.envName(p+".signing_secret_env", r.SigningSecretEnv, false)
	}

	v.oneOf("subtitles.profile", c.Subtitles.Profile, Profiles)
	for i, f := range c.Subtitles.Formats {
		v.oneOf(fmt.Sprintf("subtitles.formats[%d]", i), f, SubtitleFormats)
	}
	if c.Subtitles.Dir == "" && len(c.Subtitles.Formats) > 0 {
		v.add("subtitles.dir", "must name a directory when subtitles.formats is not empty")
	}

	sinks := map[string]int{}
	for i, s := range c.Sinks {
		v.sink(i, s, sinks)
	}

	if c.Receiver.BodyLimit <= 0 {
		v.add("receiver.body_limit", "must be a positive number of bytes (got %d)", c.Receiver.BodyLimit)
	}
	if c.Receiver.Partitions < 1 || c.Receiver.Partitions > maxPartitions {
		v.add("receiver.partitions", "must be between 1 and %d (got %d)", maxPartitions, c.Receiver.Partitions)
	}
	if c.Receiver.TokenTTL < time.Hour {
		// A token must outlive the job it serves and the service's retries of its callback.
		v.add("receiver.token_ttl", "must be at least 1h (got %s)", c.Receiver.TokenTTL)
	}
	if n := c.Receiver.MaxConnsPerIP; n == 0 || n < -1 {
		v.add("receiver.max_conns_per_ip", "must be a positive number of connections, or -1 for no bound (got %d)", n)
	}
	if n := c.Receiver.AuthFailureBurst; n == 0 || n < -1 {
		v.add("receiver.auth_failure_burst", "must be a positive number of failed authentications, or -1 for no limit (got %d)", n)
	}
	if d := c.Receiver.AuthFailureRefill; d < 100*time.Millisecond || d > 24*time.Hour {
		v.add("receiver.auth_failure_refill", "must be between 100ms and 24h (got %s)", d)
	}
	if _, err := c.Receiver.TrustedPrefixes(); err != nil {
		v.add("receiver.trusted_proxies", "%s", err.Error())
	}
	v.debug(c.Debug, c.Listen)
	v.retention(c.Retention, c.Receiver.TokenTTL)
	v.tracing(c.Tracing)
	return v.err()
}

// debug checks the profiling endpoint: off, or a host:port of its own that only this host
// reaches unless allow_remote says otherwise.
func (v *validator) debug(d DebugConfig, listen string) {
	if d.Listen == "" {
		return
	}
	host, port, err := net.SplitHostPort(d.Listen)
	switch {
	case err != nil || !validPort(port):
		v.add("debug.listen", "must be host:port, e.g. 127.0.0.1:6060, or empty for no profiling endpoint (got %q)", d.Listen)
	case !d.AllowRemote && !loopbackHost(host):
		v.add("debug.listen", "must be a loopback address such as 127.0.0.1:6060 unless debug.allow_remote is true: profiles have no authentication (got %q)", d.Listen)
	default:
		if _, lport, err := net.SplitHostPort(listen); err == nil && port != "0" && port == lport {
			v.add("debug.listen", "must not use the port of listen (%s): profiles are never served where callbacks are (got %q)", listen, d.Listen)
		}
	}
}

// loopbackHost reports whether host names this machine only: localhost or a loopback address.
// An empty host is every interface.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// Bounds of the bus keys.
const (
	minClaimAfter    = time.Second
	minSweepInterval = time.Second
	maxBusQueue      = 10_000_000
)

var busNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func (v *validator) reconcile(r ReconcileConfig) {
	for _, d := range []struct {
		key string
		val time.Duration
		min time.Duration
	}{{"reconcile.after", r.After, time.Second}, {"reconcile.every", r.Every, time.Second},
		{"reconcile.max_wait", r.MaxWait, time.Second}, {"reconcile.give_up", r.GiveUp, time.Minute},
		{"reconcile.queue_step", r.QueueStep, 0}, {"reconcile.catch_up_window", r.CatchUpWindow, time.Minute}} {
		if d.val < d.min {
			v.add(d.key, "must be a duration of at least %s (got %s)", d.min, d.val)
		}
	}
	if r.MaxWait < r.After {
		v.add("reconcile.max_wait", "must be at least reconcile.after (%s; got %s)", r.After, r.MaxWait)
	}
	if r.AudioFactor < 0 || r.AudioFactor > 100 {
		v.add("reconcile.audio_factor", "must be a number from 0 to 100 (got %g)", r.AudioFactor)
	}
}

func (v *validator) captions(c CaptionsConfig) {
	// 0 is the default (a Config built without Default).
	if c.Segment != 0 && (c.Segment < time.Second || c.Segment > time.Minute || c.Segment%time.Millisecond != 0) {
		v.add("captions.segment", "must be a duration from 1s to 1m, whole milliseconds (got %s)", c.Segment)
	}
	if c.Delay < 0 || c.Delay > time.Hour {
		v.add("captions.delay", "must be a duration from 0s to 1h (got %s)", c.Delay)
	}
	seg := c.Segment
	if seg == 0 {
		seg = DefaultCaptionsSegment
	}
	if c.Window != 0 && c.Window < 3*seg {
		v.add("captions.window", "must be 0 (every segment) or at least three segments, %s (got %s)", 3*seg, c.Window)
	}
}

func (v *validator) bus(b BusConfig) {
	if !v.oneOf("bus.driver", b.Driver, BusDrivers) {
		return
	}
	if b.Driver != "gochannel" {
		if b.URL == "" {
			v.add("bus.url", "is required when bus.driver is %s", b.Driver)
		} else if u, err := url.Parse(b.URL); err != nil || (u.Host == "" && u.Scheme != "unix") || !busSchemeOK(b.Driver, u.Scheme) {
			want := "redis://[:password@]host:6379/0 (or rediss://)"
			if b.Driver == "nats" {
				want = "nats://[user:password@]host:4222 (or tls://)"
			}
			// The value is not quoted: it may hold a password.
			v.add("bus.url", "must be a %s URL such as %s", b.Driver, want)
		}
	}
	v.rule("bus.topic", BusTopicRule(b.Driver, b.Topic))
	v.rule("bus.group", BusNameRule(b.Group))
	if b.Consumer != "" {
		v.rule("bus.consumer", BusNameRule(b.Consumer))
	}
	if b.ClaimAfter < minClaimAfter {
		v.add("bus.claim_after", "must be a duration of at least %s (got %s)", minClaimAfter, b.ClaimAfter)
	}
	if b.SweepInterval < minSweepInterval {
		v.add("bus.sweep_interval", "must be a duration of at least %s (got %s)", minSweepInterval, b.SweepInterval)
	}
	if b.SweepGrace < 0 {
		v.add("bus.sweep_grace", "must not be negative (got %s)", b.SweepGrace)
	}
	if b.Queue < 1 || b.Queue > maxBusQueue {
		v.add("bus.queue", "must be between 1 and %d (got %d)", maxBusQueue, b.Queue)
	}
	if b.MaxLen < 0 {
		v.add("bus.max_len", "must not be negative; 0 leaves the stream unbounded (got %d)", b.MaxLen)
	}
}

// BusTopicRule is the rule topic breaks as the topic of the bus driver, "" when it breaks
// none: Validate's of bus.topic, which handlers.OpenBus applies to a program's own options.
func BusTopicRule(driver, topic string) string {
	switch {
	case strings.TrimSpace(topic) == "":
		return "must not be empty"
	case strings.ContainsAny(topic, " \t\r\n*>"):
		return fmt.Sprintf("must not contain white space, '*' or '>' (got %q)", topic)
	case driver == "nats" && slices.Contains(strings.Split(topic, "."), ""):
		return fmt.Sprintf("must be a NATS subject, dot-separated tokens none of them empty (got %q)", topic)
	}
	return ""
}

// BusNameRule is the rule name breaks as a consumer group, durable consumer or consumer name,
// "" when it breaks none.
func BusNameRule(name string) string {
	if !busNameRE.MatchString(name) {
		return fmt.Sprintf("must be letters, digits, '-' and '_' (got %q)", name)
	}
	return ""
}

func busSchemeOK(driver, scheme string) bool {
	if driver == "nats" {
		return scheme == "nats" || scheme == "tls"
	}
	return scheme == "redis" || scheme == "rediss" || scheme == "unix"
}

func (v *validator) sink(i int, s Sink, names map[string]int) {
	p := fmt.Sprintf("sinks[%d]", i)
	v.name("sinks", i, s.Name, names)
	v.sinkKind(p, s)
	v.envName(p+".secret_env", s.SecretEnv, false)
	v.blobKeys(p, s)
	if s.Concurrency < 0 {
		v.add(p+".concurrency", "must not be negative (got %d; 0 is the default)", s.Concurrency)
	}
	if len(s.Events) == 0 {
		v.add(p+".events", `must list at least one event glob, e.g. "*"`)
	}
	for j, g := range s.Events {
		key := fmt.Sprintf("%s.events[%d]", p, j)
		if strings.TrimSpace(g) == "" {
			v.add(key, "must not be empty")
		} else if strings.ContainsAny(g, `[]?\`) {
			// The sinks match * only; other glob syntax would be taken literally.
			v.add(key, "may use only * as a wildcard (got %q)", g)
		} else if !api.KnownEventPattern(g) {
			// A misspelt type would match nothing, ever: the sink would wait for events that
			// never come.
			v.add(key, "must be an event type or a glob matching one: %s (got %q%s)", api.EventTypeRule, g, suggestEventType(g))
		}
	}
	for j, c := range s.Categories {
		if !api.MessageCategory(c).Valid() {
			v.add(fmt.Sprintf("%s.categories[%d]", p, j), "must be one of %s (got %q)", categoryList(), c)
		}
	}
	for j, k := range s.Kinds {
		if !api.JobKind(k).Valid() {
			v.add(fmt.Sprintf("%s.kinds[%d]", p, j), "must be %s or %s (got %q)", api.KindPreRecorded, api.KindLive, k)
		}
	}
	if s.CustomMetadata != "" {
		var obj map[string]any
		if err := json.Unmarshal([]byte(s.CustomMetadata), &obj); err != nil || obj == nil {
			v.add(p+".custom_metadata", "must be a JSON object, e.g. '{\"team\":\"media\"}' (got %q)", s.CustomMetadata)
		}
	}
	for j, a := range s.Allow {
		if !validAllow(a) {
			v.add(fmt.Sprintf("%s.allow[%d]", p, j), "must be a host name, an IP address or a CIDR range (got %q)", a)
		}
	}
	if s.Timeout <= 0 {
		v.add(p+".timeout", "must be a positive duration (got %s)", s.Timeout)
	}
	v.sinkPolicy(p, s)
	v.sinkExprs(p, s)
}

// sinkPolicy checks the sink's retry schedule and rate limit.
func (v *validator) sinkPolicy(p string, s Sink) {
	for j, w := range s.Retry {
		if w < 0 {
			v.add(fmt.Sprintf("%s.retry[%d]", p, j), "must be a duration of at least 0s (got %s)", w)
		}
	}
	if s.Retry != nil && len(s.Retry) == 0 {
		v.add(p+".retry", "must list at least one wait, e.g. [0s, 5s, 5m], or be left out for the default schedule")
	}
	if math.IsNaN(s.Rate) || math.IsInf(s.Rate, 0) || s.Rate < 0 {
		v.add(p+".rate", "must be a positive number of deliveries per second, or 0 for no limit (got %g)", s.Rate)
	}
	switch {
	case s.RateBurst < 0:
		v.add(p+".rate_burst", "must not be negative (got %d; 0 is one second's worth of rate)", s.RateBurst)
	case s.RateBurst > 0 && s.Rate == 0:
		v.add(p+".rate_burst", "needs a rate: set %s.rate, or leave rate_burst out (got %d with no rate)", p, s.RateBurst)
	}
}

// sinkExprs compiles the sink's expressions (sinks/sinkexpr), naming the sink and the key of
// each one that fails: "sinks[1] (captions).when does not compile: ERROR: <input>:1:1: …".
func (v *validator) sinkExprs(p string, s Sink) {
	at := p
	if s.Name != "" {
		at = fmt.Sprintf("%s (%s)", p, s.Name)
	}
	if s.When != "" {
		if _, err := sinkexpr.CompileWhen(s.When); err != nil {
			v.add(at+".when", "does not compile: %v", err)
		}
	}
	if s.Body != "" {
		if s.Kind != "webhook" {
			v.add(at+".body", "is for webhook sinks only (kind %s)", s.Kind)
		} else if _, err := sinkexpr.CompileBody(s.Body); err != nil {
			v.add(at+".body", "does not compile: %v", err)
		}
	}
	if len(s.Headers) > 0 && s.Kind != "webhook" {
		v.add(at+".headers", "are for webhook sinks only (kind %s)", s.Kind)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(s.Headers)) {
		if err := sinkexpr.CheckHeaderName(name); err != nil {
			v.add(fmt.Sprintf("%s.headers[%s]", at, name), "is refused: %v", err)
		} else if _, err := sinkexpr.CompileHeader(s.Headers[name]); err != nil {
			v.add(fmt.Sprintf("%s.headers[%s]", at, name), "does not compile: %v", err)
		}
	}
}

// blobKeys checks a sink's blob-only keys: prefix, raw and the S3 keys' variables, which come
// as a pair (a session token only with them).
func (v *validator) blobKeys(p string, s Sink) {
	if s.Kind != "blob" {
		for _, k := range []struct {
			key string
			set bool
		}{{"prefix", s.Prefix != ""}, {"raw", s.Raw}, {"access_key_env", s.AccessKeyEnv != ""},
			{"secret_key_env", s.SecretKeyEnv != ""}, {"session_token_env", s.SessionTokenEnv != ""}} {
			if k.set {
				v.add(p+"."+k.key, "is for blob sinks only (kind %s)", s.Kind)
			}
		}
		return
	}
	v.envName(p+".access_key_env", s.AccessKeyEnv, false)
	v.envName(p+".secret_key_env", s.SecretKeyEnv, false)
	v.envName(p+".session_token_env", s.SessionTokenEnv, false)
	switch {
	case s.AccessKeyEnv != "" && s.SecretKeyEnv == "":
		v.add(p+".secret_key_env", "is required with access_key_env: the variable of the secret access key")
	case s.AccessKeyEnv == "" && s.SecretKeyEnv != "":
		v.add(p+".access_key_env", "is required with secret_key_env: the variable of the access key id")
	}
	if s.SessionTokenEnv != "" && s.AccessKeyEnv == "" {
		v.add(p+".session_token_env", "is used only with access_key_env and secret_key_env")
	}
	if s.AccessKeyEnv != "" && strings.Contains(s.URL, "anonymous=true") {
		v.add(p+".access_key_env", "cannot be used with an anonymous bucket URL (anonymous=true)")
	}
}

// sinkKind checks the kind of the sink at p and, when the program links it, the keys the kind
// reads, by the kind's own rules (sinkkind.Kind.Validate).
func (v *validator) sinkKind(p string, s Sink) {
	k, ok := sinkkind.Lookup(s.Kind)
	if !ok {
		linked := "none"
		if names := sinkkind.Names(); len(names) > 0 {
			linked = strings.Join(names, ", ")
		}
		switch pkg, known := sinkkind.Import(s.Kind); {
		case known:
			v.add(p+".kind", "%s needs import _ %q in the program, which does not link that kind (linked: %s)", s.Kind, pkg, linked)
		case linked == "none":
			// A program that reads the configuration without importing sinks.
			v.add(p+".kind", "must be a kind the program links, and it links none (got %q)", s.Kind)
		default:
			v.add(p+".kind", "must be %s (got %q)", orList(sinkkind.Names()), s.Kind)
		}
		return
	}
	if k.Validate == nil {
		return
	}
	for _, pr := range k.Validate(s.entry()) {
		v.add(p+"."+pr.Key, "%s", pr.Rule)
	}
}

// suggestEventType proposes the event type closest to a pattern that matches none, when one is
// a typo away.
func suggestEventType(pattern string) string {
	best, bestDist := "", 3
	for _, t := range api.EventTypes() {
		if d := levenshtein(strings.ToLower(pattern), t); d < bestDist {
			best, bestDist = t, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

func categoryList() string {
	names := make([]string, len(api.Categories))
	for i, c := range api.Categories {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

type validator struct{ problems []Problem }

func (v *validator) add(key, format string, args ...any) {
	v.problems = append(v.problems, Problem{Key: key, Rule: fmt.Sprintf(format, args...)})
}

func (v *validator) err() error {
	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems}
}

// rule adds the problem of key whose rule is broken, if any ("": none).
func (v *validator) rule(key, broken string) {
	if broken != "" {
		v.add(key, "%s", broken)
	}
}

// oneOf reports whether value is allowed, adding a problem when not.
func (v *validator) oneOf(key, value string, allowed []string) bool {
	if slices.Contains(allowed, value) {
		return true
	}
	v.add(key, "must be %s (got %q)", orList(allowed), value)
	return false
}

// name checks the name of list[i]: not empty, and not the name of an earlier element (seen
// maps the names to their index).
func (v *validator) name(list string, i int, name string, seen map[string]int) {
	key := fmt.Sprintf("%s[%d].name", list, i)
	switch first, dup := seen[name]; {
	case name == "":
		v.add(key, "must not be empty")
	case dup:
		v.add(key, "must be unique (%q is also %s[%d])", name, list, first)
	default:
		seen[name] = i
	}
}

func (v *validator) httpURL(key, raw string) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.add(key, "must be an absolute http or https URL (got %q)", raw)
	}
}

func (v *validator) envName(key, name string, required bool) {
	switch {
	case name == "" && required:
		v.add(key, "is required: the name of an environment variable")
	case name != "" && !envNameRE.MatchString(name):
		v.add(key, "must be the name of an environment variable, letters, digits and _ (got %q)", name)
	}
}

// orList writes "a, b or c".
func orList(items []string) string {
	if len(items) == 1 {
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 0 && n <= 65535
}

var hostRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$`)

func validAllow(a string) bool {
	if _, err := netip.ParsePrefix(a); err == nil {
		return true
	}
	if _, err := netip.ParseAddr(a); err == nil {
		return true
	}
	return len(a) <= 253 && hostRE.MatchString(a)
}
