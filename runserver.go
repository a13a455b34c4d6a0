package scribehook

import (
	"context"
	"errors"
	"fmt"
)

// RunServer runs a program's own server beside the kit — one that mounts the kit's routes
// (Mount, Handler) on its listener (Listener) — until ctx ends or serve returns, then stops
// both within DefaultShutdownTimeout in the order that loses nothing: the server first, with
// shutdown, so that the callbacks it is receiving finish and commit while the kit still takes
// them; then the kit (Shutdown). serve blocks while the server runs (http.Server.Serve,
// fiber.App.Listener); shutdown stops it gracefully (http.Server.Shutdown,
// fiber.App.ShutdownWithContext). Start must have been called. The error joins serve's
// failure, if it stopped on its own, and both stops'.
func (k *Kit) RunServer(ctx context.Context, serve func() error, shutdown func(context.Context) error) error {
	served := make(chan error, 1)
	go func() { served <- serve() }()
	var errs []error
	select {
	case <-ctx.Done():
		k.log.Info("shutting down: finishing in-flight requests, then the pipeline")
	case err := <-served:
		if err != nil {
			errs = append(errs, fmt.Errorf("serve: %w", err))
		}
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultShutdownTimeout)
	defer cancel()
	if err := shutdown(stopCtx); err != nil {
		errs = append(errs, fmt.Errorf("stop the server: %w", err))
	}
	if err := k.Shutdown(stopCtx); err != nil {
		errs = append(errs, fmt.Errorf("stop the kit: %w", err))
	}
	return errors.Join(errs...)
}
