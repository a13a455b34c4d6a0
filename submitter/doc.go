// Package submitter is a client of every endpoint of the transcription service: create, get,
// list (one page, or every page with All) and delete pre-recorded jobs and live sessions, and
// stream audio to a live session's WebSocket (StreamLive).
//
// Calls that fail with 429 or a 5xx, or on the network, are retried with exponential back-off
// and full jitter, honouring Retry-After, within a RetryPolicy and the caller's context. Creates
// are retried only where the service cannot have made the job yet (429, 503, a refused
// connection), so that a retry never makes a duplicate. Answers outside the documented success
// codes come back as *APIError, decoded from the service's error envelope.
//
// The API key goes only to the configured host: redirects are not followed, and paging
// follows a next URL only on the same scheme and host. The key is never logged.
package submitter
