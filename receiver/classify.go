package receiver

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// inbound is an authenticated request reduced to what classification needs. Its slices and
// strings are the receiver's own copies, never Fiber's buffers.
type inbound struct {
	Route string
	// Body is the body after content decoding, or the raw body when Undecodable is set.
	Body    []byte
	Headers map[string]string
	// Undecodable is why the content encoding could not be undone; the delivery is then
	// quarantined with its raw body.
	Undecodable string
	ReceivedAt  time.Time
}

// keptHeaders are the request headers stored with a delivery. Signatures and the token stay
// out: a stored delivery must not carry credentials.
var keptHeaders = []string{
	"content-type", "user-agent",
	"webhook-id", "svix-id",
	"webhook-timestamp", "svix-timestamp",
}

// buildDelivery classifies an authenticated body and gives the delivery to ingest, with its
// dedupe key and partition. A body it cannot classify becomes a quarantined delivery: it is
// still stored, because schema drift on the service's side must not lose data.
func buildDelivery(in inbound) store.Delivery { return deliveryOf(in, singlePass) }

// decoding is how deliveryOf decodes a body: classify reads the envelope and gives what
// decodeLive takes of a live callback; decodeLive gives what the message's category depends on
// and the hash of its compacted payload, which keys it. The classification test's reference
// passes the decoding as it was before singlePass, the rest being the same.
type decoding struct {
	classify   func(body []byte) (api.Classified, json.RawMessage, error)
	decodeLive func(payload []byte) (api.LiveMessageHead, string, error)
}

// singlePass decodes the envelope once; the payload stays raw, and of a live message only what
// its category depends on is decoded.
var singlePass = decoding{
	classify: api.ClassifyCallbackPayload,
	decodeLive: func(payload []byte) (api.LiveMessageHead, string, error) {
		// payload is a span of the body classify decoded: valid JSON.
		msg, err := api.DecodeValidLiveMessageHead(payload)
		if err != nil {
			return msg, "", fmt.Errorf("live payload is not a message: %w", err)
		}
		return msg, store.PayloadHash(payload), nil
	},
}

// deliveryOf is buildDelivery decoding with dec.
func deliveryOf(in inbound, dec decoding) store.Delivery {
	d := store.Delivery{Route: in.Route, Headers: in.Headers, Body: in.Body, ReceivedAt: in.ReceivedAt}
	if in.Undecodable != "" {
		return quarantine(d, in.Undecodable)
	}
	if !utf8.Valid(in.Body) {
		// JSON is UTF-8 (RFC 8259); encoding/json would quietly turn the bad bytes into
		// U+FFFD, so the record would differ from what was sent. The raw bytes are kept.
		return quarantine(d, "body is not valid UTF-8")
	}
	c, payload, err := dec.classify(in.Body)
	if err != nil {
		return quarantine(d, err.Error())
	}
	d.Kind, d.Event, d.JobID, d.PartitionKey = c.Kind, c.Event, c.JobID, c.JobID
	switch c.Kind {
	case api.CallbackJobSuccess, api.CallbackJobError:
		d.DedupeKey = store.JobDedupeKey(c.JobID, c.Event)
	case api.CallbackLiveMessage:
		msg, hash, err := dec.decodeLive(payload)
		if err != nil {
			return quarantine(d, err.Error())
		}
		d = liveDelivery(d, c, msg, hash)
		if d.Quarantine == "" {
			d.Message, d.MessageAt = spanIn(in.Body, payload), msg.CreatedAt
		}
		return d
	case api.CallbackAccountWebhook:
		return webhookDelivery(d, in, c)
	default:
		return quarantine(d, fmt.Sprintf("unhandled callback kind %q", c.Kind))
	}
	return d
}

// spanIn locates part in body when part is a slice of body's own bytes (the classification
// hands out spans of the body it scanned); else the zero Span, and the pipeline decodes the
// message from the body as for a row of an earlier version.
func spanIn(body, part []byte) store.Span {
	off := cap(body) - cap(part)
	if len(part) == 0 || off < 0 || off > len(body)-len(part) || &body[off] != &part[0] {
		return store.Span{}
	}
	return store.Span{Off: off, Len: len(part)}
}

// liveDelivery finishes d, a live callback classified as c, from what its payload decoded to
// (msg) and the hash of the compacted payload, which keys it.
func liveDelivery(d store.Delivery, c api.Classified, msg api.LiveMessageHead, payloadHash string) store.Delivery {
	// The classification reads "type" as a map would (that exact name, last wins), the
	// message as a struct (any case): a payload where they differ is refused.
	if msg.Type != c.MessageType {
		return quarantine(d, fmt.Sprintf("live payload type is ambiguous (%q and %q)", c.MessageType, msg.Type))
	}
	cat, ok := msg.Category()
	if !ok {
		// A type the model does not know is drift; quarantine keeps it visible instead of
		// giving it a made-up category.
		return quarantine(d, fmt.Sprintf("unknown live message type %q", msg.Type))
	}
	d.MessageType, d.Category = msg.Type, cat
	d.DedupeKey = store.LiveDedupeKeyOfHash(c.JobID, payloadHash)
	return d
}

// webhookDelivery finishes d, an account webhook classified as c: keyed by its webhook-id
// (svix-id) on its route, or by its event and job when it has none.
func webhookDelivery(d store.Delivery, in inbound, c api.Classified) store.Delivery {
	if !accountEvents[c.Event] {
		// As for live types: an event the model does not know is drift, kept visible
		// rather than given a made-up status on a job record.
		return quarantine(d, fmt.Sprintf("unknown account webhook event %q", c.Event))
	}
	if id := firstNonEmpty(in.Headers["webhook-id"], in.Headers["svix-id"]); id != "" {
		d.DedupeKey = "webhook:" + in.Route + ":" + id
	} else {
		d.DedupeKey = "webhook:" + c.Event + ":" + c.JobID
	}
	return d
}

// accountEvents are the events of account webhooks (spec/provider-facts.md).
var accountEvents = map[string]bool{
	api.EventTranscriptionCreated: true, api.EventTranscriptionSuccess: true, api.EventTranscriptionError: true,
	api.EventLiveStartSession: true, api.EventLiveStartRecording: true, api.EventLiveEndRecording: true,
	api.EventLiveEndSession: true,
}

// quarantine turns d into a quarantined delivery; the dedupe key is the body's hash, so a
// retried unreadable delivery is stored once.
func quarantine(d store.Delivery, reason string) store.Delivery {
	if reason == "" {
		reason = "unclassified body"
	}
	return store.Delivery{
		DedupeKey:  "q:" + d.Route + ":" + sha256Hex(d.Body),
		Route:      d.Route,
		Quarantine: reason,
		Headers:    d.Headers,
		Body:       d.Body,
		ReceivedAt: d.ReceivedAt,
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// errTooLarge is returned when a body decodes to more than the limit.
var errTooLarge = errors.New("decoded body exceeds the limit")

// decodeBody undoes the Content-Encoding of raw, applying limit to the decoded size (a small
// gzip bomb must not fill memory). It decodes itself rather than with Fiber's c.Body, which
// caps nothing and returns an error text as the body. undecodable is set, with raw returned,
// when the encoding is unknown or the data is corrupt: such a delivery is quarantined raw.
func decodeBody(raw []byte, encoding string, limit int) (body []byte, undecodable string, err error) {
	var codings []string
	for c := range strings.SplitSeq(encoding, ",") {
		if c = strings.ToLower(strings.TrimSpace(c)); c != "" && c != "identity" {
			codings = append(codings, c)
		}
	}
	body = raw
	// Codings are listed in the order they were applied; undo them last first.
	for i := len(codings) - 1; i >= 0; i-- {
		var next []byte
		switch codings[i] {
		case "gzip", "x-gzip":
			next, err = inflate(body, limit, gzipReader)
		case "deflate":
			next, err = inflate(body, limit, zlibReader)
			if err != nil && !errors.Is(err, errTooLarge) {
				// Some senders use raw deflate without the zlib wrapper the RFC asks for.
				next, err = inflate(body, limit, flateReader)
			}
		default:
			return raw, fmt.Sprintf("unsupported content-encoding %q", codings[i]), nil
		}
		if errors.Is(err, errTooLarge) {
			return nil, "", err
		}
		if err != nil {
			return raw, fmt.Sprintf("%s body does not decode: %v", codings[i], err), nil
		}
		body = next
	}
	return body, "", nil
}

func gzipReader(r io.Reader) (io.ReadCloser, error)  { return gzip.NewReader(r) }
func zlibReader(r io.Reader) (io.ReadCloser, error)  { return zlib.NewReader(r) }
func flateReader(r io.Reader) (io.ReadCloser, error) { return flate.NewReader(r), nil }

func inflate(b []byte, limit int, open func(io.Reader) (io.ReadCloser, error)) ([]byte, error) {
	zr, err := open(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(out) > limit {
		return nil, errTooLarge
	}
	return out, nil
}
