// Package receiver is scribehook's Fiber app: the callback endpoint the service posts to, the
// authentication of those deliveries (per-job tokens, static route tokens, Standard Webhooks /
// Svix signatures), the durable inbox write that comes before every 2xx, health and metrics,
// and the local read API with its server-sent event stream.
//
// The one promise the package keeps: a 2xx answer to a callback means the raw delivery is
// committed (stored, duplicate of a stored one, or quarantined). Anything that fails before the
// commit is answered 503 with Retry-After so that the service retries; unauthenticated or
// oversized requests are answered 401 or 413 and store nothing.
//
// Routes:
//
//	POST|PUT /v1/callbacks/:token   a callback: job result or error, live message, account webhook
//	GET /healthz                    the process answers
//	GET /readyz                     the store answers and the router runs
//	GET /metrics                    Prometheus: scribehook_deliveries_total{kind,outcome},
//	                                scribehook_ack_seconds, scribehook_inbox_backlog
//	GET /v1/jobs                    local jobs, the service's filters and page envelope (bearer)
//	GET /v1/jobs/:id                a job in the service's shape plus a "local" object (bearer)
//	GET /v1/live/:id/messages       a session's stored messages in order (bearer)
//	GET /v1/live/:id/events         the same as server-sent events, then new ones (bearer)
//
// Errors of the receiver's own API are plain JSON: {"error": "<message>", "status": N}.
package receiver
