package configs

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"strings"
)

// TracingConfig is OpenTelemetry tracing (docs/operations.md, Traces): spans from a callback's
// receipt through its apply to each attempt at a sink, exported to an OTLP collector. Off
// unless Enabled. The scribehook binary builds the exporter from it (package tracing); a
// program that builds a kit gives its own TracerProvider (scribehook.WithTracerProvider).
type TracingConfig struct {
	Enabled bool `yaml:"enabled"`
	// Exporter is otlp-http (default), otlp-grpc, or stdout (each span as JSON on standard
	// output, for debugging).
	Exporter string `yaml:"exporter"`
	// Endpoint is host:port of the collector, e.g. 127.0.0.1:4318 for otlp-http (spans are
	// POSTed to /v1/traces) or 127.0.0.1:4317 for otlp-grpc; required by both.
	Endpoint string `yaml:"endpoint"`
	// Insecure exports without TLS: plain HTTP or gRPC, for a collector on this host or beside
	// it. Default false: TLS, with the system's CA certificates.
	Insecure bool `yaml:"insecure"`
	// HeadersEnv names the variable holding headers sent with every export (the collector's
	// API key): comma-separated key=value pairs, values percent-encoded where they need it, as
	// in OTEL_EXPORTER_OTLP_HEADERS. They are secrets: never in this file, never logged.
	HeadersEnv string `yaml:"headers_env"`
	// SampleRatio is the share of callbacks traced, from 0 to 1 (default 1: every one). The
	// decision is taken once per callback, at its receipt; its apply and its sink deliveries
	// follow it (parent-based).
	SampleRatio float64 `yaml:"sample_ratio"`
	// ServiceName is the service.name of the spans' resource (default scribehook).
	ServiceName string `yaml:"service_name"`
}

// Defaults and allowed values of the tracing keys.
const (
	DefaultTracingExporter    = "otlp-http"
	DefaultTracingServiceName = "scribehook"
	DefaultTracingSampleRatio = 1.0
)

// TracingExporters are the values of tracing.exporter.
var TracingExporters = []string{"otlp-http", "otlp-grpc", "stdout"}

// DefaultTracing is the tracing section of Default and ServeDefaults: off.
func DefaultTracing() TracingConfig {
	return TracingConfig{Exporter: DefaultTracingExporter, SampleRatio: DefaultTracingSampleRatio,
		ServiceName: DefaultTracingServiceName}
}

// tracing checks the tracing section. Its values are checked whether or not tracing is on, so
// that turning it on later meets no surprise; the endpoint is required only when it is on.
func (v *validator) tracing(t TracingConfig) {
	exporter := v.oneOf("tracing.exporter", t.Exporter, TracingExporters)
	switch {
	case t.Endpoint != "":
		if host, port, err := net.SplitHostPort(t.Endpoint); err != nil || host == "" || !validPort(port) || port == "0" {
			v.add("tracing.endpoint", "must be host:port of the collector, e.g. 127.0.0.1:4318, without a scheme or path (got %q)", t.Endpoint)
		}
	case t.Enabled && exporter && t.Exporter != "stdout":
		v.add("tracing.endpoint", "is required when tracing.enabled is true and tracing.exporter is %s: host:port of the collector, e.g. %s",
			t.Exporter, map[string]string{"otlp-http": "127.0.0.1:4318", "otlp-grpc": "127.0.0.1:4317"}[t.Exporter])
	}
	v.envName("tracing.headers_env", t.HeadersEnv, false)
	if math.IsNaN(t.SampleRatio) || t.SampleRatio < 0 || t.SampleRatio > 1 {
		v.add("tracing.sample_ratio", "must be between 0 and 1, the share of callbacks traced (got %v)", t.SampleRatio)
	}
	if strings.TrimSpace(t.ServiceName) == "" {
		v.add("tracing.service_name", "must not be empty")
	}
}

// ParseTracingHeaders reads the value of tracing.headers_env: comma-separated key=value pairs,
// each value percent-decoded (OTEL_EXPORTER_OTLP_HEADERS' format). Its errors name the
// variable and the pair's position, never a value: the headers carry credentials.
func ParseTracingHeaders(variable, value string) (map[string]string, error) {
	out := map[string]string{}
	for i, pair := range strings.Split(value, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, val, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || !headerNameRE.MatchString(k) {
			return nil, fmt.Errorf("%s: pair %d must be key=value with an HTTP header name as key", variable, i+1)
		}
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil || strings.ContainsAny(dec, "\r\n\x00") {
			return nil, fmt.Errorf("%s: the value of %s (pair %d) must be percent-encoded text without line breaks", variable, k, i+1)
		}
		out[strings.ToLower(k)] = dec
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no key=value pair: set it to the export headers, or remove tracing.headers_env", variable)
	}
	return out, nil
}
