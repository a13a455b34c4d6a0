// Package api is the Go model of the speech-transcription service interface: request
// parameters, job records, result objects, live messages, callback bodies and the REST error
// envelope, with validation against the documented bounds and the nine live message
// categories. Of scribehook it uses only internal/plainjson (JSON without HTML escaping), so every
// other package can depend on it.
package api
