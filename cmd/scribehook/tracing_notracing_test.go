//go:build notracing

package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A binary built with the notracing tag refuses a configuration that turns tracing on, rather
// than serving untraced.
func TestServeWithoutTracingRefusesIt(t *testing.T) {
	dir, db := tempDB(t)
	path := writeSQLiteConfig(t, dir, db, "tracing: {enabled: true, endpoint: 127.0.0.1:4318}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _, err := runCmd(ctx, nil, "--config", path, "serve")
	if err == nil || !strings.Contains(err.Error(), "built with the notracing tag") {
		t.Fatalf("serve = %v", err)
	}
}
