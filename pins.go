//go:build pins

// Package scribehook pins the module versions the project has chosen before every package
// imports them: go mod tidy keeps a module that any build-tagged file imports, so the versions
// in go.mod stay the ones we decided on (the module proxy here hides some versions; see
// docs/dependencies.md).
package scribehook

import (
	_ "github.com/ThreeDotsLabs/watermill"
	_ "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/jetstream"
	_ "github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	_ "github.com/asticode/go-astisub"
	_ "github.com/coder/websocket"
	_ "github.com/gofiber/fiber/v2"
	_ "github.com/google/uuid"
	_ "github.com/mattn/go-sqlite3"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/sirupsen/logrus"
	_ "github.com/spf13/cobra"
	_ "github.com/standard-webhooks/standard-webhooks/libraries/go"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	_ "go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	_ "go.opentelemetry.io/otel/propagation"
	_ "go.opentelemetry.io/otel/sdk/trace"
	_ "go.opentelemetry.io/otel/trace"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/crypto/bcrypt"
	_ "golang.org/x/net/http2"
)
