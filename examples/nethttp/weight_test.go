package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	scribehook "github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/configs"
)

// The program imports no store driver, bus or sink kind beyond the root package's: it links
// SQLite and none of PostgreSQL, Redis or NATS (docs/benchmarks.md, Binary weight).
func TestProgramLinksNoBrokerNorPostgres(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, heavy := range []string{"github.com/jackc/pgx", "github.com/redis/go-redis", "github.com/nats-io/", "watermill-redisstream", "watermill-nats"} {
			if strings.HasPrefix(dep, heavy) || strings.Contains(dep, heavy) {
				t.Errorf("the program links %s", dep)
			}
		}
	}
}

// A configuration that names what the program does not link is refused with the import that
// links it, for each of store.driver, bus.driver and sinks[].kind.
func TestConfigurationOfWhatIsNotLinked(t *testing.T) {
	ctx := context.Background()
	cfg := configs.Default()
	cfg.Store.Driver, cfg.Store.DSN = "postgres", "postgres://127.0.0.1:1/x"
	if _, err := scribehook.OpenStore(ctx, cfg); err == nil || !strings.Contains(err.Error(), `store.driver: `) ||
		!strings.Contains(err.Error(), `import _ "github.com/scribehook/scribehook/store/postgres"`) {
		t.Errorf("OpenStore(postgres) = %v, want the import of store/postgres", err)
	}

	cfg = configs.Default()
	cfg.Sinks = []configs.Sink{{Name: "events", Kind: "redisstream", URL: "redis://127.0.0.1:6379/0", Events: []string{"*"}, Timeout: configs.DefaultSinkTimeout}}
	err := cfg.Validate()
	if want := `sinks[0].kind redisstream needs import _ "github.com/scribehook/scribehook/sinks/redissink"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Validate(kind redisstream) = %v, want %s", err, want)
	}

	cfg = configs.Default()
	cfg.Store.DSN = t.TempDir() + "/scribehook.db"
	cfg.Bus.Driver, cfg.Bus.URL = "nats", "nats://127.0.0.1:1"
	kit, err := scribehook.New(ctx, cfg, scribehook.WithSecrets(configs.Secrets{ReadToken: strings.Repeat("k7Qw", 8)}))
	if err == nil {
		kit.Close()
	}
	if want := `import _ "github.com/scribehook/scribehook/handlers/natsbus"`; err == nil || !strings.Contains(err.Error(), "bus.driver: ") || !strings.Contains(err.Error(), want) {
		t.Errorf("New(bus nats) = %v, want bus.driver and %s", err, want)
	}
}
