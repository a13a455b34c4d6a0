// Package receiver is scribehook's Fiber app: the callback endpoint the service posts to, the
// authentication of those deliveries (per-job tokens, static route tokens, Standard Webhooks /
// Svix signatures), the durable inbox write that comes before every 2xx, health and metrics,
// and the local read API with its server-sent event stream.
//
// The one promise the package keeps: a 2xx answer to a callback means the raw delivery is
// committed (stored, duplicate of a stored one, or quarantined). Anything that fails before the
// commit is answered 5xx so that the service retries; unauthenticated or oversized requests are
// answered 4xx and store nothing.
package receiver
