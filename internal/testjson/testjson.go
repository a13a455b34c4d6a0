// Package testjson holds the JSON helpers that tests of several packages share.
package testjson

import (
	"encoding/json"
	"testing"
)

// Marshal is json.Marshal of v, failing the test when v does not encode.
func Marshal(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
