// Package plainjson encodes JSON as scribehook writes it everywhere a delivery's text travels:
// without HTML escaping, so a transcript's "<", ">" and "&" stay themselves (not \u003c…), as
// the service sent them. Nothing it encodes is embedded in HTML.
package plainjson

import (
	"bytes"
	"encoding/json"
)

// Marshal is json.Marshal without HTML escaping: compact, with no trailing newline.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
