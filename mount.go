package scribehook

import (
	"net"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/scribehook/scribehook/receiver"
)

// Mount registers the kit's callback routes (POST|PUT /v1/callbacks/:token) on r, under
// whatever prefix r has, and the read API, health, metrics and dashboard routes opts asks for.
// Each route enforces the kit's body limit, token check and log redaction itself; what the
// parent app must still set (StreamRequestBody, BodyLimit, DisablePreParseMultipartForm,
// timeouts, the Listener wrapper) is in receiver.Receiver.Mount's documentation. public_url
// must include the prefix: it is the base of the callback URLs handed to the service. When it
// does not end with r's prefix, Mount logs a warning naming both and Check reports a
// *receiver.PrefixError; it does not refuse, since a proxy in front may rewrite paths.
//
// Callbacks mounted before Start are committed and acknowledged; they are processed once
// Start has run.
func (k *Kit) Mount(r fiber.Router, opts receiver.MountOptions) { k.recv.Mount(r, opts) }

// FiberConfig is the fiber.Config a parent app that mounts the kit starts from: bodies streamed
// (the token checked before a callback's body is received), BodyLimit receiver.body_limit, no
// multipart parsing before the handlers, the server's timeouts, and the receiver's
// ErrorHandler, which never quotes a path. Streaming turns the app's BodyLimit off for its own
// routes too: bound their bodies with receiver.LimitBody.
func (k *Kit) FiberConfig() fiber.Config { return k.recv.FiberConfig() }

// Handler is the kit's routes as a net/http handler, for programs without Fiber: callbacks are
// served natively (streamed, the token checked before the body is read), the rest as Mount
// does. Under a prefix, strip it: mux.Handle("/hooks/", http.StripPrefix("/hooks", kit.Handler(opts))),
// and put the prefix in public_url (https://example.com/hooks): the handler never sees the
// prefix, so no one checks that for you.
func (k *Kit) Handler(opts receiver.MountOptions) http.Handler { return k.recv.Handler(opts) }

// Listener wraps the TCP listener of a program's own server (a parent Fiber app with Mount, an
// http.Server with Handler) with what Serve does on its connections: a cap per client address
// (receiver.max_conns_per_ip) and a drain that lets a client read a refusal (413, 401) while it
// still sends its body.
func (k *Kit) Listener(ln net.Listener) net.Listener { return k.recv.Listener(ln) }

// Check reports what the kit found wrong in how a program put it together, which it logged as
// warnings when it found it: for now, each Mount under a prefix that public_url's path does
// not end with (a *receiver.PrefixError), which the service's callbacks would miss. A program
// or its tests call it after mounting; nil when nothing was found.
func (k *Kit) Check() error { return k.recv.Check() }
