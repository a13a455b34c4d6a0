// Package tracing builds the OpenTelemetry TracerProvider a configuration's tracing: section
// describes: an OTLP exporter (HTTP or gRPC) or the stdout one, behind a batch span processor,
// a parent-based ratio sampler, and a resource named after tracing.service_name. The scribehook
// binary gives it to its kit (scribehook.WithTracerProvider); a program that builds a kit may
// too, or give a provider of its own.
//
// It is a package apart because of what it links: the SDK and the exporters' clients (gRPC,
// protobuf), several MB that a program which does not trace, or traces through a provider of
// its own, does not carry. The kit itself depends on OpenTelemetry's API only.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/scribehook/scribehook/configs"
)

// Config is what New builds a provider from.
type Config struct {
	// Tracing is the configuration's tracing: section; required, with Enabled true.
	Tracing configs.TracingConfig
	// Headers are sent with every export (configs.Secrets.TracingHeaders, read from the
	// variable tracing.headers_env names); none when nil.
	Headers map[string]string
	// Stdout is where the stdout exporter writes; standard output when nil.
	Stdout io.Writer
}

// New builds the provider cfg describes. Nothing is dialled yet: the OTLP exporters connect
// when they first export, in the background, and an export that fails is reported to
// OpenTelemetry's error handler and dropped, never holding up a callback. Spans wait in the
// batch processor's queue (2048) and are exported every 5 s or by 512; past the queue they
// are dropped. The caller shuts the provider down after the kit, which exports what is
// queued.
func New(ctx context.Context, cfg Config) (*sdktrace.TracerProvider, error) {
	t := cfg.Tracing
	if !t.Enabled {
		return nil, errors.New("tracing: tracing.enabled is false: nothing to build")
	}
	exp, err := exporter(ctx, cfg)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		// OTEL_RESOURCE_ATTRIBUTES (deployment.environment, …), under the configuration's name.
		resource.WithFromEnv(),
		resource.WithAttributes(attribute.String("service.name", t.ServiceName)),
	)
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		// The decision is taken at a callback's receipt (a new root) and followed by everything
		// it leads to: its apply and its sink deliveries are traced whole or not at all.
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(t.SampleRatio))),
	), nil
}

// exporter builds the exporter tracing.exporter names.
func exporter(ctx context.Context, cfg Config) (sdktrace.SpanExporter, error) {
	t := cfg.Tracing
	switch t.Exporter {
	case "otlp-http":
		// A URL sets the host, the path and TLS or not at once, over whatever the OTEL_EXPORTER_OTLP_*
		// variables say of them: the configuration decides where spans go. What it does not set
		// (a timeout, compression, a CA certificate, headers without headers_env) follows them.
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(scheme(t) + "://" + t.Endpoint + "/v1/traces")}
		if len(cfg.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(cfg.Headers))
		}
		exp, err := otlptracehttp.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("tracing: otlp-http exporter: %w", err)
		}
		return exp, nil
	case "otlp-grpc":
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(scheme(t) + "://" + t.Endpoint)}
		if len(cfg.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(cfg.Headers))
		}
		exp, err := otlptracegrpc.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("tracing: otlp-grpc exporter: %w", err)
		}
		return exp, nil
	case "stdout":
		w := cfg.Stdout
		if w == nil {
			w = os.Stdout
		}
		exp, err := stdouttrace.New(stdouttrace.WithWriter(w))
		if err != nil {
			return nil, fmt.Errorf("tracing: stdout exporter: %w", err)
		}
		return exp, nil
	}
	return nil, fmt.Errorf("tracing: tracing.exporter must be one of %v (got %q)", configs.TracingExporters, t.Exporter)
}

// scheme is http without TLS (tracing.insecure), https otherwise: how the exporters' endpoint
// URLs say it.
func scheme(t configs.TracingConfig) string {
	if t.Insecure {
		return "http"
	}
	return "https"
}
