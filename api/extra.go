package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"unicode"
)

// Extra holds the members of a JSON object that this model does not know. The service adds
// fields over time; an object scribehook decodes and encodes again (a job record's top level,
// a request's parameters) must keep them, so those types carry an Extra and round-trip it. A
// result is never re-encoded (it stays raw, Job.Result), so its types carry none.
type Extra map[string]json.RawMessage

// knownFields caches, per struct type, the JSON member names its fields claim, folded.
var knownFields sync.Map // reflect.Type -> map[string]struct{}

// fieldNames returns the folded member names of t. They are folded because encoding/json
// fills a field from a member whose name matches it case-insensitively ("AUDIO_URL" sets
// audio_url): such a member is not unknown, and keeping it in Extra as well would write it back
// after the real field, where it would win on the next decode.
func fieldNames(t reflect.Type) map[string]struct{} {
	if v, ok := knownFields.Load(t); ok {
		return v.(map[string]struct{})
	}
	names := map[string]struct{}{}
	collectFieldNames(t, names)
	folded := make(map[string]struct{}, len(names))
	for n := range names {
		folded[foldName(n)] = struct{}{}
	}
	knownFields.Store(t, folded)
	return folded
}

// isKnown reports whether member name k fills a field of the set returned by fieldNames.
func isKnown(known map[string]struct{}, k string) bool {
	_, ok := known[foldName(k)]
	return ok
}

// foldName folds a member name the way encoding/json matches names: foldName(a) ==
// foldName(b) exactly when strings.EqualFold(a, b).
func foldName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

// foldRune returns the smallest rune of r's case-folding orbit.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

func collectFieldNames(t reflect.Type, names map[string]struct{}) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				collectFieldNames(ft, names)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names[name] = struct{}{}
	}
}

// decodeKeeping decodes data into v (a pointer to a method-free alias of the real type) and
// stores the members v's fields do not claim in extra.
//
// Finding unknown members does not decode the object a second time: its member names are
// scanned first (hasUnknownMember, no allocation), and only an object that has a member the
// type does not know is decoded into a map to keep it. Most objects have none, and a 2-hour
// result has 20,000 words, each an object.
func decodeKeeping(data []byte, v any, extra *Extra) error {
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil // null: nothing to keep
	}
	known := fieldNames(reflect.TypeOf(v).Elem())
	if !hasUnknownMember(trimmed, known) {
		*extra = nil
		return nil
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &all); err != nil {
		return err
	}
	var unknown Extra
	for k, raw := range all {
		if isKnown(known, k) {
			continue
		}
		if unknown == nil {
			unknown = Extra{}
		}
		unknown[k] = raw
	}
	*extra = unknown
	return nil
}

// encodeKeeping encodes v (a method-free alias) and appends the extra members in a stable
// order. Known fields win over an extra member of the same name.
func encodeKeeping(v any, extra Extra) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	if len(b) < 2 || b[0] != '{' {
		return nil, fmt.Errorf("encode %T: not an object", v)
	}
	return appendExtras(b, 0, extra, fieldNames(reflect.TypeOf(v)))
}

// extraSize is about what appendExtras adds for extra.
func extraSize(extra Extra) int {
	n := 0
	for k, v := range extra {
		n += len(k) + len(v) + 4
	}
	return n
}

// appendExtras adds to the object dst[start:] (which ends with '}') the members of extra that
// known does not claim, sorted by name, a value missing as null, each as it came:
// encodeKeeping's order.
func appendExtras(dst []byte, start int, extra Extra, known map[string]struct{}) ([]byte, error) {
	if len(extra) == 0 {
		return dst, nil
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if !isKnown(known, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return dst, nil
	}
	sort.Strings(keys)
	dst = dst[:len(dst)-1]
	for _, k := range keys {
		if len(dst) > start+1 {
			dst = append(dst, ',')
		}
		kb, _ := json.Marshal(k)
		dst = append(dst, kb...)
		dst = append(dst, ':')
		raw := extra[k]
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
		dst = append(dst, raw...)
	}
	return append(dst, '}'), nil
}
