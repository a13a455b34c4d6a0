// Package sandbox is a local stand-in of the transcription service: every endpoint of the
// interface, the job state machine, callbacks, the live WebSocket protocol and fault injection.
package sandbox
