package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/scribehook/scribehook/api"
)

// metadataParam is the name the bracket form of the custom_metadata list filter starts with.
const metadataParam = "custom_metadata"

// bracketFilter is the custom_metadata list filter in the bracket form the official SDKs send
// (custom_metadata[key]=value, one parameter a member; custom_metadata[a][b]=value names a
// member of a nested object). It is kept next to the JSON form that api.ParseListQuery reads:
// a job must pass both.
type bracketFilter struct {
	tree   map[string]any // leaves are strings, inner nodes map[string]any
	params url.Values     // the parameters as given, for the page links
}

// parseBracketFilter reads every custom_metadata[...] parameter. A malformed name, a member
// given twice with different values, or a member that is both a value and an object is a
// violation. An empty value is a filter on the empty string: the parameter names its member,
// unlike an empty custom_metadata=, which a form sends for a field left blank.
func parseBracketFilter(v url.Values) (bracketFilter, api.ValidationErrors) {
	f := bracketFilter{params: url.Values{}}
	var errs api.ValidationErrors
	keys := make([]string, 0, len(v))
	for k := range v {
		if strings.HasPrefix(k, metadataParam+"[") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys) // violations in a stable order
	for _, k := range keys {
		path, ok := bracketPath(k)
		if !ok {
			errs = append(errs, api.FieldError{Field: k, Message: "must be custom_metadata[key]=value, with a non-empty key in brackets (custom_metadata[a][b] for a nested member)"})
			continue
		}
		vals := v[k]
		for _, other := range vals[1:] {
			if other != vals[0] {
				errs = append(errs, api.FieldError{Field: k, Message: fmt.Sprintf("must be given at most once (got %d different values)", len(vals))})
				break
			}
		}
		if f.tree == nil {
			f.tree = map[string]any{}
		}
		if !insertPath(f.tree, path, vals[0]) {
			errs = append(errs, api.FieldError{Field: k, Message: "names a member that another custom_metadata parameter makes an object, or the reverse"})
		}
		f.params[k] = vals[:1]
	}
	if len(errs) > 0 {
		return bracketFilter{}, errs
	}
	return f, nil
}

// bracketPath splits custom_metadata[a][b] into [a b].
func bracketPath(key string) ([]string, bool) {
	rest := strings.TrimPrefix(key, metadataParam)
	var path []string
	for rest != "" {
		if rest[0] != '[' {
			return nil, false
		}
		end := strings.IndexByte(rest, ']')
		if end < 2 || strings.ContainsRune(rest[1:end], '[') {
			return nil, false
		}
		path = append(path, rest[1:end])
		rest = rest[end+1:]
	}
	return path, len(path) > 0
}

func insertPath(tree map[string]any, path []string, value string) bool {
	node := tree
	for _, seg := range path[:len(path)-1] {
		switch child := node[seg].(type) {
		case nil:
			next := map[string]any{}
			node[seg] = next
			node = next
		case map[string]any:
			node = child
		default:
			return false
		}
	}
	last := path[len(path)-1]
	if existing, ok := node[last]; ok {
		s, isLeaf := existing.(string)
		return isLeaf && s == value
	}
	node[last] = value
	return true
}

// matches applies the rules of the JSON form (api.ListQuery.Matches): every member named must
// be present, and a nested object matches as a subset. A query string carries only text, and
// the SDKs turn every value into text (String(value)), so a value also matches a number equal
// to it (42 and 42.0 for "42") and a boolean of the same spelling; null, arrays and objects
// never match a value.
func (f bracketFilter) matches(j *api.Job) bool {
	if len(f.tree) == 0 {
		return true
	}
	b := bytes.TrimSpace(j.CustomMetadata)
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // exact numbers: large ids must not round into each other
	var have map[string]any
	if dec.Decode(&have) != nil {
		return false
	}
	return treeMatches(f.tree, have)
}

func treeMatches(want, have map[string]any) bool {
	for k, w := range want {
		h, ok := have[k]
		if !ok {
			return false
		}
		switch w := w.(type) {
		case map[string]any:
			hm, ok := h.(map[string]any)
			if !ok || !treeMatches(w, hm) {
				return false
			}
		case string:
			if !scalarMatches(w, h) {
				return false
			}
		}
	}
	return true
}

func scalarMatches(want string, have any) bool {
	switch h := have.(type) {
	case string:
		return h == want
	case bool:
		return strconv.FormatBool(h) == want
	case json.Number:
		if !isJSONNumber(want) {
			return false // big.Rat would also read fractions (1/2) and hex
		}
		if strings.ContainsAny(want, "eE") || strings.ContainsAny(string(h), "eE") {
			// An exponent could make an exact value astronomically large: compare as floats.
			x, errX := strconv.ParseFloat(want, 64)
			y, errY := strconv.ParseFloat(string(h), 64)
			return errX == nil && errY == nil && x == y
		}
		x, okX := new(big.Rat).SetString(want)
		y, okY := new(big.Rat).SetString(string(h))
		return okX && okY && x.Cmp(y) == 0
	}
	return false
}

func isJSONNumber(s string) bool {
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if dec.Decode(&v) != nil || dec.More() {
		return false
	}
	_, ok := v.(json.Number)
	return ok
}
