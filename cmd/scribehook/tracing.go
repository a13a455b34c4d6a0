//go:build !notracing

package main

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/tracing"
)

// tracingFlushTimeout bounds the export of the last spans when serve stops.
const tracingFlushTimeout = 5 * time.Second

// startTracing builds the tracer provider of the configuration's tracing: section (the stdout
// exporter writes to the command's standard output) and gives the kit's option for it, and
// what exports the spans still queued once the kit has stopped.
func startTracing(cmd *cobra.Command, cfg configs.Config, secrets configs.Secrets, log *logrus.Entry) (scribehook.Option, func(), error) {
	tp, err := tracing.New(cmd.Context(), tracing.Config{Tracing: cfg.Tracing, Headers: secrets.TracingHeaders, Stdout: cmd.OutOrStdout()})
	if err != nil {
		return nil, nil, err
	}
	// The SDK reports a failed export only to OpenTelemetry's process-wide error handler, which
	// writes through the standard library's logger by default. The binary owns its process, so
	// it sends them to its own log; a library never sets it (the kit takes a provider instead).
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.WithError(err).Warn("tracing: spans not exported")
	}))
	log.WithFields(logrus.Fields{"exporter": cfg.Tracing.Exporter, "endpoint": cfg.Tracing.Endpoint,
		"sample_ratio": cfg.Tracing.SampleRatio}).Info("tracing on")
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), tracingFlushTimeout)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			log.WithError(err).Warn("tracing: the last spans were not exported")
		}
	}
	return scribehook.WithTracerProvider(tp), stop, nil
}
