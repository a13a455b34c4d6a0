// Package receiver is scribehook's callback endpoint and local HTTP surface: the endpoint the
// service posts to, the authentication of those deliveries (per-job tokens, static route
// tokens, Standard Webhooks / Svix signatures), the durable inbox write that comes before every
// 2xx, health and metrics, the local read API with its server-sent event stream, and the
// dashboard.
//
// The one promise the package keeps: a 2xx answer to a callback means the raw delivery is
// committed (stored, duplicate of a stored one, or quarantined). Anything that fails before the
// commit is answered 503 with Retry-After so that the service retries; unauthenticated or
// oversized requests are answered 401 or 413 and store nothing.
//
// # Three ways to serve it
//
// The callback endpoint is written once (authenticate the token before the body is read, read
// the body bounded by Config.BodyLimit, verify the signature, classify, commit, answer) and
// served three ways, with the same answers byte for byte:
//
//   - Serve runs the receiver's own Fiber app (App) on a listener, every route at the root.
//     Only it has the server-level protections: requests refused on their headers alone (a bad
//     token, ambiguous framing) before any body byte is waited for, 10 s for the headers and
//     60 s for the body, the per-address connection cap (Config.MaxConnsPerIP).
//   - Mount registers the routes on a program's own Fiber router under any prefix
//     (app.Group("/hooks"), or an app later mounted with app.Mount). Every route carries its own
//     limits, error answers, panic recovery and token redaction, since Fiber keeps none of a
//     mounted app's settings; the parent server's settings are the parent's, and Mount's
//     documentation says which ones to set (fiber.Config.StreamRequestBody, BodyLimit,
//     fiber.Config.DisablePreParseMultipartForm, timeouts) and why.
//   - Handler serves the same routes with net/http, for programs without Fiber: callbacks
//     natively (the body streamed, the token checked before it is read), the rest through a
//     Fiber app of the receiver's own. Mount it under a prefix with http.StripPrefix.
//
// Under a prefix, the service's callback URLs carry it, and Config.PublicURL, where the
// receiver is reached, includes it. The dashboard builds every URL relative to its page, so it
// works under any prefix, next to the read API and /metrics.
//
// Routes, relative to where the receiver is served:
//
//	POST|PUT /v1/callbacks/:token   a callback: job result or error, live message, account webhook
//	GET /healthz                    the process answers
//	GET /readyz                     the store answers and the router runs
//	GET /metrics                    Prometheus: scribehook_deliveries_total{kind,outcome},
//	                                scribehook_ack_seconds, scribehook_inbox_backlog,
//	                                scribehook_inbox_failed
//	GET /v1/jobs                    local jobs, the service's filters and page envelope (bearer)
//	GET /v1/jobs/:id                a job in the service's shape plus a "local" object (bearer)
//	GET /v1/live/:id/messages       a session's stored messages in order (bearer)
//	GET /v1/live/:id/events         the same as server-sent events, then new ones (bearer)
//	GET /v1/deadletters, /v1/sinks  dead letters and sink states (bearer); POST
//	                                /v1/deadletters/:id/replay queues one again
//	GET /v1/sinks/:name/deliveries  a sink's deliveries newest first, no bodies (bearer);
//	                                POST /v1/sinks/:name/replay queues a window again or
//	                                backfills a sink added later
//	GET /v1/inbox/failed            deliveries whose apply failed for good (bearer); POST
//	                                /v1/inbox/:id/replay and /v1/inbox/replay (a filter)
//	                                move them back to pending
//	POST /v1/sessions/revoke        signs every dashboard session out (bearer)
//	GET /ui/                        the dashboard (sign-in turns the read token into a session
//	                                cookie; sign-out revokes it in the store)
//
// Errors of the receiver's own API are plain JSON: {"error": "<message>", "status": N}.
//
// A callback URL holds a secret token: the receiver never logs it (a callback route logs its
// pattern, …/v1/callbacks/:token) nor answers with it. A program that logs its own requests
// should log LogPath(c) for the routes Mount registered.
package receiver
