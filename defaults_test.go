package scribehook_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
)

// A program that builds a kit from configs.Default() and sets only what it must (where the
// service is, where the kit listens, where its database is) finds nothing in its working
// directory once a job has come back: no file sink under ./out, no ./artifacts, no
// ./scribehook.db. Those are the binary's defaults (configs.ServeDefaults), not a library's.
func TestDefaultWritesNothingUnasked(t *testing.T) {
	service := startSandbox("Nothing unasked", "lands in the working directory")
	t.Cleanup(service.Close)
	wd := t.TempDir()
	t.Chdir(wd)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := configs.Default()
	cfg.Listen = ln.Addr().String()
	cfg.PublicURL = "http://" + ln.Addr().String()
	cfg.Service.BaseURL = service.URL
	cfg.Store.DSN = filepath.Join(t.TempDir(), "kit.db")

	ctx := context.Background()
	kit, err := scribehook.New(ctx, cfg, scribehook.WithLogger(quietLogger()),
		scribehook.WithSecrets(configs.Secrets{APIKey: service.APIKey}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kit.Close() })
	if err := kit.Start(ctx); err != nil {
		t.Fatal(err)
	}
	go func() { _ = kit.Serve(ln) }()
	sub, err := kit.Submitter()
	if err != nil {
		t.Fatal(err)
	}
	created, err := sub.Submit(ctx, api.PreRecordedRequest{AudioURL: service.AudioURL})
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	rec, err := scribehook.WaitJob(waitCtx, kit.Records(), created.ID, 0, nil)
	if err != nil || rec.Job.Status != api.StatusDone {
		t.Fatalf("WaitJob: %v (status %s)", err, rec.Job.Status)
	}
	if err := kit.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(wd)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("the kit wrote %s in the working directory", e.Name())
	}
}

// Default leaves store.dsn to the program: New refuses it empty, naming the key, unless the
// program gives the store itself.
func TestDefaultStoreDSNIsTheProgramsToGive(t *testing.T) {
	ctx := context.Background()
	cfg := configs.Default()
	_, err := scribehook.New(ctx, cfg, scribehook.WithLogger(quietLogger()), scribehook.WithSecrets(configs.Secrets{}))
	if err == nil || !strings.Contains(err.Error(), "store.dsn must name the database") {
		t.Fatalf("New(Default()) = %v, want store.dsn named", err)
	}

	opened := configs.Default()
	opened.Store.DSN = filepath.Join(t.TempDir(), "own.db")
	st, err := scribehook.OpenStore(ctx, opened)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	kit, err := scribehook.New(ctx, cfg, scribehook.WithStore(st), scribehook.WithLogger(quietLogger()),
		scribehook.WithSecrets(configs.Secrets{}))
	if err != nil {
		t.Fatalf("New(Default(), WithStore) = %v", err)
	}
	_ = kit.Close()

	cfg.Listen = "nowhere"
	if _, err := scribehook.New(ctx, cfg, scribehook.WithStore(st), scribehook.WithSecrets(configs.Secrets{})); err == nil ||
		!strings.Contains(err.Error(), "listen must be host:port") || strings.Contains(err.Error(), "store.dsn") {
		t.Errorf("New(WithStore) with a bad listen = %v, want listen alone", err)
	}
}
