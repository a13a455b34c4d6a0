package sinkexpr

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

// need is the part of a JSON value an expression reads: the whole of it (all), or some members
// of an object, each a need of its own. A job.succeeded event's data is the whole job record,
// megabytes for a long result, and a when usually reads one number of it: decoding only what
// is read keeps the event's bytes from being turned into a Go tree per event (BenchmarkWhenResult2h).
type need struct {
	all  bool
	kids map[string]*need
}

// add marks path (member names from this value down) as read; an empty path is the whole value.
func (n *need) add(path []string) {
	if n.all {
		return
	}
	if len(path) == 0 {
		n.all, n.kids = true, nil
		return
	}
	if n.kids == nil {
		n.kids = map[string]*need{}
	}
	kid := n.kids[path[0]]
	if kid == nil {
		kid = &need{}
		n.kids[path[0]] = kid
	}
	kid.add(path[1:])
}

// key is the need written out, the same for two needs of the same members, so that programs
// that read the same part of an event share its decoding.
func (n *need) key() string {
	if n == nil {
		return "-"
	}
	if n.all {
		return "*"
	}
	var b strings.Builder
	n.write(&b)
	return b.String()
}

func (n *need) write(b *strings.Builder) {
	if n.all {
		b.WriteByte('*')
		return
	}
	b.WriteByte('{')
	for i, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range n.kids {
			if !yield(k) {
				return
			}
		}
	}) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconvQuote(k))
		b.WriteByte(':')
		n.kids[k].write(b)
	}
	b.WriteByte('}')
}

func strconvQuote(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// dataNeed is what the checked expression reads of event.data: nil for nothing. A chain of
// member selections from event (event.data.result.metadata.audio_duration, has() included)
// reads the value at its end; event itself, or event.data used any other way (indexed, passed
// to a function, iterated), reads all of it.
func dataNeed(checked *cel.Ast) *need {
	var n *need
	mark := func(path []string) {
		if len(path) > 0 && path[0] != "data" {
			return // an envelope field: always there
		}
		if n == nil {
			n = &need{}
		}
		if len(path) == 0 {
			n.add(nil)
		} else {
			n.add(path[1:])
		}
	}
	var visit func(e ast.NavigableExpr)
	visit = func(e ast.NavigableExpr) {
		if path, ok := eventPath(e); ok {
			mark(path)
			return
		}
		for _, c := range e.Children() {
			visit(c)
		}
	}
	visit(ast.NavigateAST(checked.NativeRep()))
	return n
}

// eventPath is the member names of a chain of selections rooted at the event variable
// (event.a.b, event["a"].b), false for any other expression.
func eventPath(e ast.Expr) ([]string, bool) {
	switch e.Kind() {
	case ast.IdentKind:
		return nil, e.AsIdent() == "event"
	case ast.SelectKind:
		s := e.AsSelect()
		p, ok := eventPath(s.Operand())
		return append(p, s.FieldName()), ok
	case ast.CallKind:
		c := e.AsCall()
		if c.FunctionName() != "_[_]" || len(c.Args()) != 2 || c.Args()[1].Kind() != ast.LiteralKind {
			return nil, false
		}
		key, isString := c.Args()[1].AsLiteral().(types.String)
		if !isString {
			return nil, false
		}
		p, ok := eventPath(c.Args()[0])
		return append(p, string(key)), ok
	}
	return nil, false
}

// decodeNeed decodes of raw what n reads: objects keep the members n names, and the values
// n reads whole are decoded as encoding/json does. Anything but an object where n names
// members is decoded whole, so that the expression meets the value's real type.
func decodeNeed(raw []byte, n *need) (any, error) {
	if n == nil {
		return nil, nil
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, nil
	}
	if n.all || raw[0] != '{' {
		return decodeAll(raw)
	}
	out := map[string]any{}
	err := members(raw, func(key string, val []byte) error {
		kid := n.kids[key]
		if kid == nil {
			return nil
		}
		v, err := decodeNeed(val, kid)
		if err != nil {
			return err
		}
		out[key] = v
		return nil
	})
	if errors.Is(err, errScan) {
		// Malformed: the full decoder says where, as it would have without the need.
		return decodeAll(raw)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

func decodeAll(raw []byte) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}

var errScan = errors.New("malformed JSON object")

// members calls fn with each member of the JSON object raw: its key, unescaped, and its
// value's bytes, which are not checked beyond their extent (a value fn reads is decoded by
// encoding/json, which checks it).
func members(raw []byte, fn func(key string, val []byte) error) error {
	i := skipSpace(raw, 1)
	if i < len(raw) && raw[i] == '}' {
		return nil
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return errScan
		}
		end := skipString(raw, i)
		if end < 0 {
			return errScan
		}
		key := string(raw[i+1 : end-1])
		if bytes.IndexByte(raw[i:end], '\\') >= 0 {
			if err := json.Unmarshal(raw[i:end], &key); err != nil {
				return err
			}
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return errScan
		}
		i = skipSpace(raw, i+1)
		vend := skipValue(raw, i)
		if vend < 0 {
			return errScan
		}
		if err := fn(key, raw[i:vend]); err != nil {
			return err
		}
		i = skipSpace(raw, vend)
		if i >= len(raw) {
			return errScan
		}
		switch raw[i] {
		case '}':
			return nil
		case ',':
			i = skipSpace(raw, i+1)
		default:
			return errScan
		}
	}
	return errScan
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// skipString is the index after the string that starts at raw[i] ('"'), -1 if it does not end.
func skipString(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue is the index after the value that starts at raw[i], -1 if it does not end.
func skipValue(raw []byte, i int) int {
	if i >= len(raw) {
		return -1
	}
	switch raw[i] {
	case '"':
		return skipString(raw, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				end := skipString(raw, j)
				if end < 0 {
					return -1
				}
				j = end - 1
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
	}
	j := i
	for j < len(raw) && !strings.ContainsRune(",}] \t\r\n", rune(raw[j])) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}
