package configs

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
)

// The tracing keys: every rule broken at once, each problem naming its key and rule.
func TestTracingValidation(t *testing.T) {
	cfg := ServeDefaults()
	cfg.Tracing = TracingConfig{Enabled: true, Exporter: "zipkin", Endpoint: "http://collector:4318/v1/traces",
		HeadersEnv: "OTLP-HEADERS", SampleRatio: 1.5, ServiceName: " "}
	var ve *ValidationError
	if err := cfg.Validate(); !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	want := []string{
		`tracing.exporter must be otlp-http, otlp-grpc or stdout (got "zipkin")`,
		`tracing.endpoint must be host:port of the collector, e.g. 127.0.0.1:4318, without a scheme or path (got "http://collector:4318/v1/traces")`,
		`tracing.headers_env must be the name of an environment variable, letters, digits and _ (got "OTLP-HEADERS")`,
		`tracing.sample_ratio must be between 0 and 1, the share of callbacks traced (got 1.5)`,
		`tracing.service_name must not be empty`,
	}
	if got := ve.Sentences(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("sentences =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	for _, tc := range []struct {
		name string
		t    TracingConfig
		want string // "" valid
	}{
		{"off needs no endpoint", TracingConfig{Exporter: "otlp-grpc", SampleRatio: 1, ServiceName: "s"}, ""},
		{"on needs one", TracingConfig{Enabled: true, Exporter: "otlp-grpc", SampleRatio: 1, ServiceName: "s"},
			"config: tracing.endpoint is required when tracing.enabled is true and tracing.exporter is otlp-grpc: host:port of the collector, e.g. 127.0.0.1:4317"},
		{"stdout needs none", TracingConfig{Enabled: true, Exporter: "stdout", SampleRatio: 0, ServiceName: "s"}, ""},
		{"port zero", TracingConfig{Enabled: true, Exporter: "otlp-http", Endpoint: "127.0.0.1:0", SampleRatio: 1, ServiceName: "s"},
			`config: tracing.endpoint must be host:port of the collector, e.g. 127.0.0.1:4318, without a scheme or path (got "127.0.0.1:0")`},
		{"valid", TracingConfig{Enabled: true, Exporter: "otlp-http", Endpoint: "[::1]:4318", SampleRatio: 0.01, ServiceName: "s"}, ""},
	} {
		cfg := ServeDefaults()
		cfg.Tracing = tc.t
		err := cfg.Validate()
		if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
			t.Errorf("%s: err = %v\nwant %s", tc.name, err, tc.want)
		}
	}
}

// Every tracing key comes from the file or the environment; sample_ratio is a number.
func TestTracingFromEnvironment(t *testing.T) {
	cfg, err := Load("", []string{"SCRIBEHOOK_TRACING_ENABLED=true", "SCRIBEHOOK_TRACING_EXPORTER=otlp-grpc",
		"SCRIBEHOOK_TRACING_ENDPOINT=127.0.0.1:4317", "SCRIBEHOOK_TRACING_INSECURE=true",
		"SCRIBEHOOK_TRACING_HEADERS_ENV=OTLP_HEADERS", "SCRIBEHOOK_TRACING_SAMPLE_RATIO=0.125",
		"SCRIBEHOOK_TRACING_SERVICE_NAME=hooks-eu"})
	want := TracingConfig{Enabled: true, Exporter: "otlp-grpc", Endpoint: "127.0.0.1:4317", Insecure: true,
		HeadersEnv: "OTLP_HEADERS", SampleRatio: 0.125, ServiceName: "hooks-eu"}
	if err != nil || cfg.Tracing != want {
		t.Fatalf("tracing = %+v, %v\nwant %+v", cfg.Tracing, err, want)
	}
	_, err = Load("", []string{"SCRIBEHOOK_TRACING_SAMPLE_RATIO=half"})
	if err == nil || err.Error() != `config: SCRIBEHOOK_TRACING_SAMPLE_RATIO: tracing.sample_ratio must be a number (got "half")` {
		t.Fatalf("err = %v", err)
	}
	_, err = Load(writeFile(t, "tracing: {sample_ratio: [1]}\n"), nil)
	if err == nil || err.Error() != "config: line 1: tracing.sample_ratio must be a number (got a list)" {
		t.Fatalf("err = %v", err)
	}
}

// The export headers are a secret named by tracing.headers_env: read from the environment (or
// a _FILE) only when tracing is on, parsed, and never printed, nor quoted by an error.
func TestTracingHeaders(t *testing.T) {
	cfg := ServeDefaults()
	cfg.Tracing = TracingConfig{Enabled: true, Exporter: "otlp-http", Endpoint: "127.0.0.1:4318", HeadersEnv: "OTLP_HEADERS",
		SampleRatio: 1, ServiceName: "s"}
	s, err := cfg.Secrets([]string{"OTLP_HEADERS=Authorization=Bearer%20tr4ce-key, X-Tenant = eu ,"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"authorization": "Bearer tr4ce-key", "x-tenant": "eu"}; !maps.Equal(s.TracingHeaders, want) {
		t.Fatalf("headers = %v, want %v", s.TracingHeaders, want)
	}
	j, _ := json.Marshal(s)
	for _, out := range []string{s.String(), fmt.Sprintf("%+v", s), fmt.Sprintf("%#v", s), string(j)} {
		if strings.Contains(out, "tr4ce-key") || !strings.Contains(out, "tracing_headers=2") {
			t.Fatalf("secrets print %q", out)
		}
	}

	for env, want := range map[string]string{
		"":                             "tracing: environment variable OTLP_HEADERS is empty: set it to the export headers (key=value,…), or remove headers_env",
		"OTLP_HEADERS=tr4ce-key":       "tracing: OTLP_HEADERS: pair 1 must be key=value with an HTTP header name as key",
		"OTLP_HEADERS=a=1,b c=tr4ce":   "tracing: OTLP_HEADERS: pair 2 must be key=value with an HTTP header name as key",
		"OTLP_HEADERS=k=tr4ce%zz":      "tracing: OTLP_HEADERS: the value of k (pair 1) must be percent-encoded text without line breaks",
		"OTLP_HEADERS=k=tr4ce%0d%0aX:": "tracing: OTLP_HEADERS: the value of k (pair 1) must be percent-encoded text without line breaks",
		"OTLP_HEADERS= , ":             "tracing: OTLP_HEADERS holds no key=value pair: set it to the export headers, or remove tracing.headers_env",
	} {
		if _, err := cfg.Secrets([]string{env}); err == nil || err.Error() != want {
			t.Errorf("%q: err = %v\nwant %s", env, err, want)
		}
	}

	// Off, the variable is not read: an unset one is no error.
	cfg.Tracing.Enabled = false
	if s, err := cfg.Secrets(nil); err != nil || s.TracingHeaders != nil {
		t.Fatalf("off: %v, %v", s.TracingHeaders, err)
	}
}
