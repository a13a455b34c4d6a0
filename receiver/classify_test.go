package receiver

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

func TestDecodeBody(t *testing.T) {
	plain := []byte(`{"event":"x"}`)
	var zl, raw bytes.Buffer
	zw := zlib.NewWriter(&zl)
	zw.Write(plain)
	zw.Close()
	fw, _ := flate.NewWriter(&raw, flate.BestSpeed)
	fw.Write(plain)
	fw.Close()
	cases := []struct {
		name, encoding string
		in             []byte
		out            []byte
		undecodable    string
	}{
		{"none", "", plain, plain, ""},
		{"identity", "Identity", plain, plain, ""},
		{"gzip", "gzip", gzipped(t, plain), plain, ""},
		{"x-gzip", "x-gzip", gzipped(t, plain), plain, ""},
		{"deflate with zlib wrapper", "deflate", zl.Bytes(), plain, ""},
		{"raw deflate", "deflate", raw.Bytes(), plain, ""},
		{"two codings, undone last first", "deflate, gzip", gzipped(t, zl.Bytes()), plain, ""},
		{"unknown coding", "br", plain, plain, `unsupported content-encoding "br"`},
		{"corrupt gzip", "gzip", []byte("not gzip"), []byte("not gzip"), "gzip body does not decode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, und, err := decodeBody(tc.in, tc.encoding, 1024)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, tc.out) || !strings.HasPrefix(und, tc.undecodable) || (tc.undecodable == "") != (und == "") {
				t.Errorf("got %q %q", out, und)
			}
		})
	}
	if _, _, err := decodeBody(gzipped(t, bytes.Repeat([]byte("a"), 1025)), "gzip", 1024); err != errTooLarge {
		t.Errorf("over the limit: %v", err)
	}
	if out, _, err := decodeBody(gzipped(t, bytes.Repeat([]byte("a"), 1024)), "gzip", 1024); err != nil || len(out) != 1024 {
		t.Errorf("at the limit: %d %v", len(out), err)
	}
}

// FuzzClassifyDelivery checks buildDelivery on any body: no panic, a complete delivery for
// every classified body, a non-empty reason for every quarantined one, and dedupe keys that
// depend on what the delivery is, not on how its JSON is spaced.
func FuzzClassifyDelivery(f *testing.F) {
	seeds, _ := filepath.Glob("../api/testdata/*.json")
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add("partner", b, "", "")
			f.Add("job", b, "msg_1", "")
		}
	}
	f.Add("account", []byte(`{"event":"transcription.created","payload":{"id":"j"}}`), "msg_9", "")
	f.Add("job", []byte(`{"id":"s","event":"live.translation","payload":{"type":"translation","error":{"message":"x"}}}`), "", "")
	f.Add("job", []byte(`{"id":"s","event":"live.x","payload":{"type":"audio_preprocessed"}}`), "", "")
	f.Add("job", []byte(`{"id":"s","event":"live.transcript","payload":{"type":"transcript","Type":"end_session"}}`), "", "")
	f.Add("job", []byte(`not json`), "", "br")
	f.Add("job", []byte{0x1f, 0x8b, 0x08}, "", "gzip")
	f.Fuzz(func(t *testing.T, route string, body []byte, webhookID, encoding string) {
		decoded, undecodable, err := decodeBody(bytes.Clone(body), encoding, 1<<16)
		if err != nil {
			return // too large: answered 413, never classified
		}
		in := inbound{Route: route, Body: decoded, Undecodable: undecodable, Headers: map[string]string{}}
		if webhookID != "" {
			in.Headers["webhook-id"] = webhookID
		}
		d := buildDelivery(in)
		if again := buildDelivery(in); !sameDelivery(d, again) {
			t.Fatalf("not deterministic:\n%+v\n%+v", d, again)
		}
		if d.DedupeKey == "" {
			t.Fatalf("empty dedupe key: %+v", d)
		}
		if d.Quarantine != "" {
			if d.Kind != "" || d.JobID != "" || d.PartitionKey != "" || !strings.HasPrefix(d.DedupeKey, "q:"+route+":") {
				t.Fatalf("quarantined delivery carries a classification: %+v", d)
			}
			return
		}
		if d.JobID == "" || d.PartitionKey != d.JobID || d.Event == "" {
			t.Fatalf("classified without job or partition: %+v", d)
		}
		prefix := map[api.CallbackKind]string{
			api.CallbackJobSuccess:     "job:" + d.JobID + ":",
			api.CallbackJobError:       "job:" + d.JobID + ":",
			api.CallbackLiveMessage:    "live:" + d.JobID + ":",
			api.CallbackAccountWebhook: "webhook:",
		}[d.Kind]
		if prefix == "" || !strings.HasPrefix(d.DedupeKey, prefix) {
			t.Fatalf("kind %q with key %q", d.Kind, d.DedupeKey)
		}
		if d.Kind == api.CallbackLiveMessage && (!d.Category.Valid() || !d.MessageType.Known()) {
			t.Fatalf("live message with category %q type %q", d.Category, d.MessageType)
		}
		// Spacing is not identity: a re-indented body is the same delivery.
		var spaced bytes.Buffer
		if json.Indent(&spaced, decoded, "", "\t") == nil {
			in.Body = spaced.Bytes()
			if re := buildDelivery(in); re.DedupeKey != d.DedupeKey || re.Kind != d.Kind {
				t.Fatalf("re-indented body: key %q kind %q, was %q %q", re.DedupeKey, re.Kind, d.DedupeKey, d.Kind)
			}
		}
	})
}

func sameDelivery(a, b store.Delivery) bool {
	return a.DedupeKey == b.DedupeKey && a.Route == b.Route && a.Kind == b.Kind && a.Event == b.Event &&
		a.JobID == b.JobID && a.MessageType == b.MessageType && a.Category == b.Category &&
		a.PartitionKey == b.PartitionKey && a.Quarantine == b.Quarantine && bytes.Equal(a.Body, b.Body)
}
