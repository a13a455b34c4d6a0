// Package scribehook is the kit as a library: it builds every part of scribehook from a
// configs.Config — the store, the callback receiver, the Watermill pipeline that applies
// deliveries exactly once, subtitle rendering and the sinks — runs them, and stops them in order.
// The scribehook binary is a thin layer of flags and printing over this package; a Go program
// can do everything the binary does.
//
// A program receives the service's callbacks in one of three ways:
//
//   - Run (or Start and Serve): the kit's own HTTP server, with its protections on the
//     connection (token and framing refused on the headers alone, a cap per client address);
//   - Mount: the callback routes (and, if asked, the read API and dashboard) on a router of the
//     program's own Fiber app, under any prefix;
//   - Handler: the same as a net/http handler.
//
// Events (job.succeeded, live.<type>, subtitles.ready…) reach Go code through WithEventHandler:
// each handler has a durable queue filled in the same transaction that applies the delivery, so
// a handler is called at least once per event even across crashes, with the event's stable id
// for idempotence, retried with back-off, dead-lettered and replayable, and in order per job or
// session when asked.
//
// Jobs and live sessions whose callbacks point back at the kit are created with a Submitter:
// it mints a per-job callback token (stored only as a hash), creates the job at the service,
// binds the token and records the job, so that WaitJob can wait for its callback in the local
// store without ever polling the service.
package scribehook
