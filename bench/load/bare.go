package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/scribehook/scribehook/internal/testinfra"
	"github.com/scribehook/scribehook/receiver"
)

// cmdBare serves the callback route with a handler that answers 200 and stores nothing: the
// ceiling of Fiber on this machine, measured in the same run as serve so that the ratio between
// the two does not depend on the machine's speed. It runs in its own process, like serve, so
// that both share the CPU with the load generator in the same way.
func cmdBare(args []string) error {
	fs := flag.NewFlagSet("bare", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address")
	_ = fs.Parse(args)
	// The same server settings as the receiver's, so only the handler differs.
	app := fiber.New(fiber.Config{
		BodyLimit: receiver.DefaultBodyLimit, ReadTimeout: 60 * time.Second, WriteTimeout: 30 * time.Second,
		IdleTimeout: 120 * time.Second, DisableStartupMessage: true,
	})
	handler := func(c *fiber.Ctx) error {
		return c.Status(fiber.StatusOK).JSON(ackBody{Status: "stored", ID: 1})
	}
	app.Post("/v1/callbacks/:token", handler)
	app.Put("/v1/callbacks/:token", handler)
	go func() {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
		<-stop
		_ = app.ShutdownWithTimeout(5 * time.Second)
	}()
	if err := app.Listen(*listen); err != nil {
		return fmt.Errorf("bare handler: %w", err)
	}
	return nil
}

// bareProc is the bare handler's process, run as serve's is (testinfra.Process: a log file of
// its own in the run's directory, an early exit reported with the log's end).
type bareProc struct {
	*testinfra.Process
	addr string
}

// startBare runs the bare handler, logging in dir, and waits until it answers a callback.
func startBare(dir string) (*bareProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the load tool's binary: %w", err)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	b := &bareProc{addr: addr, Process: &testinfra.Process{
		Name: "the bare handler", LogName: "bare", Dir: dir, Within: 10 * time.Second,
		Command: func() *exec.Cmd { return exec.Command(self, "bare", "-listen", addr) },
		Ready: func() error {
			resp, err := plainClient.Post("http://"+addr+callbackPath, "application/json", nil)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("POST %s: %d", callbackPath, resp.StatusCode)
			}
			return nil
		},
		Started: track, Exited: untrack,
	}}
	if err := b.Start(context.Background()); err != nil {
		return nil, err
	}
	return b, nil
}
