// Package sandbox is a local stand-in of the transcription service: every endpoint of the
// interface, the job state machine, callbacks, the live WebSocket protocol and fault injection.
//
// # What it holds, and for how long
//
// Jobs and sessions are in memory for the life of the Server. The audio is on disk, in one
// directory the Server makes under Config.TempDir (the system's temporary directory by
// default) and Close removes with all it holds:
//
//   - An upload (POST /v2/upload) is written there as it arrives, never held in memory, within
//     Config.MaxUploadBytes for one file and Config.MaxUploadStoreBytes for all the uploads held
//     at once (1 GiB by default); past either, the upload is refused with a 413 naming the
//     limit. A job made from an upload holds it: the upload goes when the last job made from
//     it is deleted (DELETE …/{id}). An upload that no job uses goes Config.UploadTTL (1 h by
//     default) after it was made, checked at least every half TTL and at every read.
//   - The copy of a fetched audio_url goes with its job; a live session's recording with its
//     session.
//
// # Uploads are served inert, to whoever holds their URL or the key
//
// The audio_url an upload answers is /v2/files/{id}?token=…, the token 256 random bits: like a
// signed URL, it is the capability to read the file, and a job given it reads the upload
// straight from disk. GET /v2/files/{id} answers the API key header or that token only (a
// wrong token is a 404, like an unknown id), and serves the bytes as application/octet-stream
// with X-Content-Type-Options: nosniff, Content-Disposition: attachment and
// Content-Security-Policy: default-src 'none'; sandbox, whatever they are: an upload is anyone's
// content, and a browser on the sandbox's site (a dashboard on another port shares it) must
// neither render it nor run it. GET /v2/pre-recorded/{id}/file sends the same headers, with
// audio/wav only for a WAV.
//
// # Outbound connections
//
// Every connection the sandbox opens on behalf of a request goes through internal/netguard
// with Config.AllowFetch as its allow-list: audio_url and sidecar fetches, and callbacks (the
// default Config.HTTPClient). Loopback, private, link-local, CGNAT and metadata addresses are
// refused unless the list covers them, checked after DNS and on every redirect; an address
// literal is refused before any connection is tried. Tests and the demo run everything on
// loopback and so pass 127.0.0.0/8. A Config.HTTPClient given by the caller sends callbacks as
// it is: guarding it is then the caller's business.
package sandbox
