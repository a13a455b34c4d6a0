package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// The dedupe keys of the deliveries the service makes: the receiver keys what it receives
// with them, and the reconciler what it fetches in place of a lost callback, so that the one
// that comes second is a duplicate in the inbox whichever it is.

// JobDedupeKey keys a pre-recorded job's callback of event (transcription.success or
// transcription.error): the service sends one per job.
func JobDedupeKey(jobID, event string) string { return "job:" + jobID + ":" + event }

// LiveDedupeKey keys a live message of a session by its payload (the message as the service
// sent it): two deliveries of the same message, whatever their white space, have one key.
func LiveDedupeKey(sessionID string, payload []byte) string {
	return LiveDedupeKeyOfHash(sessionID, PayloadHash(payload))
}

// LiveDedupeKeyOfHash is LiveDedupeKey from the payload's PayloadHash.
func LiveDedupeKeyOfHash(sessionID, payloadHash string) string {
	return "live:" + sessionID + ":" + payloadHash
}

// PayloadHash is the hex SHA-256 of the valid JSON payload compacted, so that white space does
// not make a retry look new. Most senders write it compact already, and then it is hashed as it
// is.
func PayloadHash(payload []byte) string {
	if isCompact(payload) {
		return sha256Hex(payload)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, payload); err != nil {
		return sha256Hex(payload) // not valid JSON: hashed as it is
	}
	return sha256Hex(buf.Bytes())
}

// isCompact reports whether the valid JSON b has no white space outside its strings, which is
// when json.Compact leaves it as it is.
func isCompact(b []byte) bool {
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ' ', '\t', '\n', '\r':
			return false
		}
	}
	return true
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
