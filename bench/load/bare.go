package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"

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

// bareProc is the bare handler's process.
type bareProc struct {
	cmd  *exec.Cmd
	addr string
}

func startBare() (*bareProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the load tool's binary: %w", err)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "bare", "-listen", addr)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the bare handler: %w", err)
	}
	track(cmd.Process)
	b := &bareProc{cmd: cmd, addr: addr}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := plainClient.Post("http://"+addr+callbackPath, "application/json", nil)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return b, nil
			}
		}
	}
	b.stop()
	return nil, fmt.Errorf("the bare handler did not answer on %s", addr)
}

func (b *bareProc) stop() {
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = b.cmd.Wait(); untrack(b.cmd.Process); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-done
	}
}
