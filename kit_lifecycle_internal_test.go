package scribehook

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// settledGoroutines waits up to two seconds for the number of goroutines to fall back to at
// most base, and returns the stacks of what is left over otherwise. Goroutines of other tests
// are not a concern: these tests do not run in parallel.
func settledGoroutines(t *testing.T, base int) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			return string(buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
	return ""
}

// lifecycleBound is what a stop that used to wait for Watermill's 10 s close timeout must
// now take at most: generous, so that a slow machine does not fail it, and well below 10 s.
const lifecycleBound = 3 * time.Second

// A program that builds a kit and returns early (docs/library.md puts defer kit.Close() right
// after New) closes it without Start: quickly, without an error, and without goroutines left
// behind. It used to wait 10 s for handlers that never ran and fail "router close timeout".
func TestCloseWithoutStart(t *testing.T) {
	base := runtime.NumGoroutine()
	dir := t.TempDir()
	ln := listen(t)
	_ = ln.Close()
	k, err := New(context.Background(), kitConfig(dir, ln, "http://127.0.0.1:1"), WithLogger(logx.Discard()),
		WithSecrets(configs.Secrets{}))
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := k.Close(); err != nil {
		t.Errorf("close without start: %v", err)
	}
	if took := time.Since(began); took > lifecycleBound {
		t.Errorf("close without start took %s", took)
	}
	if left := settledGoroutines(t, base); left != "" {
		t.Errorf("goroutines left after close without start:\n%s", left)
	}
	if err := k.Start(context.Background()); err == nil {
		t.Error("start after close: no error")
	}
}

// A New that fails after the pipeline is built (here the receiver refuses a route without a
// token) closes what it opened at once, not after the pipeline's close timeout.
func TestNewFailingCleansUpQuickly(t *testing.T) {
	base := runtime.NumGoroutine()
	dir := t.TempDir()
	ln := listen(t)
	_ = ln.Close()
	began := time.Now()
	_, err := New(context.Background(), kitConfig(dir, ln, "http://127.0.0.1:1"), WithLogger(logx.Discard()),
		WithSecrets(configs.Secrets{Routes: map[string]configs.RouteSecrets{"empty": {}}}))
	if err == nil || !strings.Contains(err.Error(), "token is empty") {
		t.Fatalf("New with an empty route token: %v", err)
	}
	if took := time.Since(began); took > lifecycleBound {
		t.Errorf("failing New took %s", took)
	}
	if left := settledGoroutines(t, base); left != "" {
		t.Errorf("goroutines left after a failing New:\n%s", left)
	}
}

// cancellingStore is a store whose ReleaseSinkLeases, the first thing Start asks, has nothing
// to release and does not look at its context (as a store with no leases need not), but
// cancels the start meanwhile: the cancellation comes while Start runs.
type cancellingStore struct {
	store.Store
	cancel context.CancelFunc
}

func (s cancellingStore) ReleaseSinkLeases(context.Context) (int64, error) {
	if s.cancel != nil {
		s.cancel()
	}
	return 0, nil
}

// Start honours its context: cancelled before or while it starts, it starts nothing and
// returns ctx.Err(); the kit can then be started with a live context, and closes quickly.
func TestStartHonoursContext(t *testing.T) {
	dir := t.TempDir()
	ln := listen(t)
	_ = ln.Close()
	st := teststore.OpenSQLite(t, sqlite.Config{Path: filepath.Join(dir, "scribehook.db")})
	ctx, cancel := context.WithCancel(context.Background())
	k, err := New(context.Background(), kitConfig(dir, ln, "http://127.0.0.1:1"), WithLogger(logx.Discard()),
		WithSecrets(configs.Secrets{}), WithStore(cancellingStore{Store: st, cancel: cancel}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Close() })
	if err := k.Start(ctx); err != context.Canceled {
		t.Fatalf("start cancelled while starting: %v, want context.Canceled", err)
	}
	if err := k.Start(ctx); err != context.Canceled {
		t.Fatalf("start with a cancelled context: %v, want context.Canceled", err)
	}
	if err := k.Start(context.Background()); err != nil {
		t.Fatalf("start after a cancelled start: %v", err)
	}
	began := time.Now()
	if err := k.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if took := time.Since(began); took > lifecycleBound {
		t.Errorf("close took %s", took)
	}
}

// A handler's filter with a misspelt event type is refused by New, naming the handler, the
// field and the rule; it used to be taken, and the handler never ran.
func TestEventHandlerUnknownEventType(t *testing.T) {
	dir := t.TempDir()
	ln := listen(t)
	_ = ln.Close()
	_, err := New(context.Background(), kitConfig(dir, ln, "http://127.0.0.1:1"), WithLogger(logx.Discard()),
		WithSecrets(configs.Secrets{}), WithEventHandler(EventHandler{
			Name: "billing", Filter: sinks.Filter{Events: []string{"job.succeded"}},
			Func: func(context.Context, api.Event) error { return nil },
		}))
	want := `event handler billing: Filter: events[0]: "job.succeded" is not an event type nor a glob matching one`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("New with a misspelt event type: %v, want %q", err, want)
	}
}

// A kit mounted under /hooks with a public_url without it says so through Check (and a
// warning): the service would call back where nothing answers.
func TestKitCheckFindsMountPrefixMissingFromPublicURL(t *testing.T) {
	dir := t.TempDir()
	ln := listen(t)
	_ = ln.Close()
	cfg := kitConfig(dir, ln, "http://127.0.0.1:1") // public_url http://127.0.0.1:<port>, no path
	k, err := New(context.Background(), cfg, WithLogger(logx.Discard()), WithSecrets(configs.Secrets{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Close() })
	k.Mount(fiber.New().Group("/hooks"), receiver.MountOptions{})
	var perr *receiver.PrefixError
	if err := k.Check(); !errors.As(err, &perr) || perr.Prefix != "/hooks" || perr.PublicPath != "" {
		t.Errorf("Check() = %v, want a PrefixError naming /hooks", err)
	}
}
