package api

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// A light scanner over JSON: it finds the members of an object and the ends of values without
// decoding them, so that a question like "has this object a member the model does not know?"
// costs one pass over the bytes and no allocation. The ends of values are found without
// validating them (exact on JSON encoding/json has validated); the fast decodings, which read
// unvalidated bytes, read each value themselves. It never decides alone: on bytes it does not
// expect it reports failure, and every caller then takes the exact encoding/json path.

// members walks the members of a JSON object, for the scans below and for readers of bytes
// encoding/json has not validated: it checks the grammar around
// the members (a key is a string, ':' and ',' where they belong, and, for ok, nothing after the
// object but white space) and never undoes a key's escapes, so a key with escapes is never equal
// to a plain name a caller looks for. Each value is either the caller's to read from the index
// member gives (then after), or found by next, whose value ends where valueEnd says: exact on
// valid JSON only, so callers of next on other bytes must not trust more than the key.
type members struct {
	data []byte
	i    int
	bad  bool // the bytes were not the object expected; callers must fall back
	done bool // the closing brace is read
}

// objectMembers starts a walk over obj, which must start with '{' (after white space).
func objectMembers(obj []byte) members {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return members{bad: true, done: true}
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return members{data: obj, i: i + 1, done: true}
	}
	return members{data: obj, i: i}
}

// member returns the next key, as written between the quotes, and the index of its value;
// false at the end of the object or on bytes it does not take (then m.bad is set).
func (m *members) member() (key []byte, value int, ok bool) {
	if m.done || m.bad {
		return nil, 0, false
	}
	b, i := m.data, m.i
	end := -1
	if _, next, plain := plainString(b, i); plain {
		end = next // most keys: read faster than by stringEnd's search
	} else if i < len(b) && b[i] == '"' {
		end = stringEnd(b, i)
	}
	if end < 0 {
		m.bad = true
		return nil, 0, false
	}
	j := skipSpace(b, end)
	if j >= len(b) || b[j] != ':' {
		m.bad = true
		return nil, 0, false
	}
	return b[i+1 : end-1], skipSpace(b, j+1), true
}

// after moves on from a value that ends before i: to the next member, or past the object.
func (m *members) after(i int) {
	i = skipSpace(m.data, i)
	switch {
	case i < len(m.data) && m.data[i] == '}':
		m.i, m.done = i+1, true
	case i < len(m.data) && m.data[i] == ',':
		m.i = skipSpace(m.data, i+1)
	default:
		m.bad = true
	}
}

// ok reports whether the object was read to its end, with nothing after it but white space.
func (m *members) ok() bool { return !m.bad && m.done && skipSpace(m.data, m.i) == len(m.data) }

// next returns the next member, its key as member gives it and its value; false at the end of
// the object or on unexpected bytes (then m.bad is set).
func (m *members) next() (key, value []byte, ok bool) {
	key, i, ok := m.member()
	if !ok {
		return nil, nil, false
	}
	end := valueEnd(m.data, i)
	if end < 0 {
		m.bad = true
		return nil, nil, false
	}
	if m.after(end); m.bad {
		return nil, nil, false
	}
	return key, m.data[i:end], true
}

// all ranges over the members next returns; after the loop, m.bad tells whether the walk ended
// on bytes it does not take rather than at the end of the object.
func (m *members) all(yield func(key, value []byte) bool) {
	for {
		k, v, ok := m.next()
		if !ok || !yield(k, v) {
			return
		}
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// stringEnd returns the index after the string starting at b[i] == '"', or -1.
func stringEnd(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		// The quote ends the string unless an odd number of backslashes precede it.
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// valueEnd returns the index after the value starting at b[i], or -1.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := stringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	case '}', ']', ',', ':':
		return -1
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// plainKey reports whether a key as written is ASCII without escapes, so that its bytes are
// the member name encoding/json decodes.
func plainKey(key []byte) bool {
	for _, c := range key {
		if c == '\\' || c >= utf8.RuneSelf || c < ' ' {
			return false
		}
	}
	return true
}

// keyName returns the member name encoding/json decodes from a key as written (escapes undone,
// invalid UTF-8 replaced), and false if it cannot.
func keyName(key []byte) (string, bool) {
	if plainKey(key) {
		return string(key), true
	}
	quoted := make([]byte, 0, len(key)+2)
	quoted = append(append(append(quoted, '"'), key...), '"')
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		return "", false
	}
	return s, true
}

// lastMember returns the value of the last member of obj named exactly name (case matters, as
// for a map), as decoding obj into a map[string]json.RawMessage would give it. ok is false when
// there is none; bad when obj could not be scanned.
func lastMember(obj []byte, name string) (value []byte, ok, bad bool) {
	m := objectMembers(obj)
	for k, v := range m.all {
		if plainKey(k) {
			if string(k) == name {
				value, ok = v, true
			}
			continue
		}
		if s, good := keyName(k); !good {
			return nil, false, true
		} else if s == name {
			value, ok = v, true
		}
	}
	if m.bad {
		return nil, false, true
	}
	return value, ok, false
}

// hasUnknownMember reports whether the object obj has a member whose name does not fill a
// field of known (the folded names of fieldNames). It errs only towards true: on anything it
// does not expect it answers true, and the caller decodes the members to find out.
func hasUnknownMember(obj []byte, known map[string]struct{}) bool {
	var buf [64]byte
	m := objectMembers(obj)
	for k := range m.all {
		if len(k) <= len(buf) && plainKey(k) {
			// ASCII folds to upper case (foldName); the lookup does not allocate.
			for i, c := range k {
				if 'a' <= c && c <= 'z' {
					c -= 'a' - 'A'
				}
				buf[i] = c
			}
			if _, ok := known[string(buf[:len(k)])]; !ok {
				return true
			}
			continue
		}
		s, ok := keyName(k)
		if !ok || !isKnown(known, s) {
			return true
		}
	}
	return m.bad
}

// plainString reads the JSON string at b[i] when it has no escape and no control character,
// returning its bytes (not yet checked for UTF-8) and the index after it.
func plainString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < ' ':
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// fastString reads the JSON string at b[i] as encoding/json decodes it into a string: a plain
// string directly, one with escapes through encoding/json (escapes undone, invalid UTF-8
// replaced). It reports false for anything that is not a string.
func fastString(b []byte, i int) (string, int, bool) {
	if s, next, ok := plainString(b, i); ok && utf8.Valid(s) {
		return string(s), next, true
	}
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	end := stringEnd(b, i)
	if end < 0 {
		return "", 0, false
	}
	var s string
	if json.Unmarshal(b[i:end], &s) != nil {
		return "", 0, false
	}
	return s, end, true
}

// stringValue decodes v, a whole value, as encoding/json decodes a string; false when v is not
// exactly one string.
func stringValue(v []byte) (string, bool) {
	s, end, ok := fastString(v, 0)
	return s, ok && end == len(v)
}

// plainStringValue returns the bytes of v when v is exactly one string without escapes or
// control characters, in valid UTF-8: the bytes encoding/json decodes it to.
func plainStringValue(v []byte) ([]byte, bool) {
	s, next, ok := plainString(v, 0)
	return s, ok && next == len(v) && utf8.Valid(s)
}
