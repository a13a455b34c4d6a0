// Package submitter is a client of every endpoint of the transcription service.
package submitter
