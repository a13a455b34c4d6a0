//go:build notracing

package main

import (
	"errors"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/configs"
)

// startTracing refuses tracing in a binary built with the notracing tag: it links neither the
// OpenTelemetry SDK nor the exporters (gRPC, protobuf: about 14 MB of the stripped binary).
func startTracing(*cobra.Command, configs.Config, configs.Secrets, *logrus.Entry) (scribehook.Option, func(), error) {
	return nil, nil, errors.New("tracing.enabled: this scribehook was built with the notracing tag, without the exporters; " +
		"run a build without it, or set tracing.enabled to false")
}
