package store

import (
	"errors"
	"fmt"
	"html"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrBadQuery is wrapped by the errors of ParseSearch: a query from outside that cannot be
// searched (the read API answers 400).
var ErrBadQuery = errors.New("invalid search query")

// Bounds of a search query: a query is typed by a person, and each term costs an index walk.
const (
	MaxQueryBytes  = 512
	MaxQueryTerms  = 16
	MaxQueryTokens = 64
	// MinPrefixRunes keeps a prefix from matching most of the index ("a*").
	MinPrefixRunes = 2
)

// SearchTerm is one required term: a word, a phrase (several words in a row), either with its
// last word a prefix.
type SearchTerm struct {
	Words  []string // lower case, each a token (Words)
	Prefix bool
}

// SearchTerms is a parsed query: every term must match.
type SearchTerms []SearchTerm

// ParseSearch reads a query: terms separated by spaces, all required; "double quotes" make a
// phrase, whose words must follow each other; a term ending in * matches words starting with
// it (at least MinPrefixRunes letters). Words are runs of letters and digits, compared in
// lower case; anything else separates them, so that don't is the phrase "don t", as the
// indexes read the text. There are no operators: OR, NOT and - are words or nothing.
func ParseSearch(q string) (SearchTerms, error) {
	if len(q) > MaxQueryBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrBadQuery, MaxQueryBytes)
	}
	if !utf8.ValidString(q) {
		return nil, fmt.Errorf("%w: not UTF-8", ErrBadQuery)
	}
	var terms SearchTerms
	tokens := 0
	add := func(chunk string, phrase bool) error {
		words := Words(chunk)
		if len(words) == 0 {
			return nil
		}
		t := SearchTerm{Words: make([]string, len(words))}
		for i, w := range words {
			t.Words[i] = w.Word
		}
		last := words[len(words)-1]
		if strings.HasPrefix(chunk[last.End:], "*") && (!phrase || last.End == len(chunk)-1) {
			if utf8.RuneCountInString(last.Word) < MinPrefixRunes {
				return fmt.Errorf("%w: prefix %q shorter than %d letters", ErrBadQuery, last.Word, MinPrefixRunes)
			}
			t.Prefix = true
		}
		tokens += len(words)
		terms = append(terms, t)
		if len(terms) > MaxQueryTerms || tokens > MaxQueryTokens {
			return fmt.Errorf("%w: more than %d terms or %d words", ErrBadQuery, MaxQueryTerms, MaxQueryTokens)
		}
		return nil
	}
	for rest := q; rest != ""; {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if rest == "" {
			break
		}
		var chunk string
		phrase := rest[0] == '"'
		if phrase {
			// An unclosed quote runs to the end; a * right after the closing quote makes its last
			// word a prefix.
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				chunk, rest = rest[1:], ""
			} else {
				chunk, rest = rest[1:end+1], rest[end+2:]
				if strings.HasPrefix(rest, "*") {
					chunk, rest = chunk+"*", rest[1:]
				}
			}
		} else {
			end := strings.IndexFunc(rest, func(r rune) bool { return unicode.IsSpace(r) || r == '"' })
			if end < 0 {
				end = len(rest)
			}
			chunk, rest = rest[:end], rest[end:]
		}
		if err := add(chunk, phrase); err != nil {
			return nil, err
		}
	}
	if len(terms) == 0 {
		return nil, fmt.Errorf("%w: no words", ErrBadQuery)
	}
	return terms, nil
}

// WordToken is a word of a text and where it is (byte offsets).
type WordToken struct {
	Word       string // lower case
	Start, End int
}

// Words splits text into words: maximal runs of letters and digits, lower-cased. FTS5's
// unicode61 tokenizer and PostgreSQL's simple configuration read plain words the same way.
func Words(text string) []WordToken {
	var out []WordToken
	start := -1
	for i, r := range text {
		word := unicode.IsLetter(r) || unicode.IsDigit(r)
		switch {
		case word && start < 0:
			start = i
		case !word && start >= 0:
			out = append(out, WordToken{Word: strings.ToLower(text[start:i]), Start: start, End: i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, WordToken{Word: strings.ToLower(text[start:]), Start: start, End: len(text)})
	}
	return out
}

// FTS5 is the query as an FTS5 MATCH expression: each term a quoted string, a prefix term
// followed by *, all required.
func (ts SearchTerms) FTS5() string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteString(" AND ")
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(strings.Join(t.Words, " "), `"`, `""`))
		b.WriteByte('"')
		if t.Prefix {
			b.WriteByte('*')
		}
	}
	return b.String()
}

// TSQuery is the query as PostgreSQL's to_tsquery text: each word a quoted lexeme, the words of
// a phrase joined by <->, a prefix marked :*, the terms joined by &.
func (ts SearchTerms) TSQuery() string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteString(" & ")
		}
		b.WriteByte('(')
		for j, w := range t.Words {
			if j > 0 {
				b.WriteString(" <-> ")
			}
			b.WriteByte('\'')
			b.WriteString(strings.NewReplacer(`'`, `''`, `\`, `\\`).Replace(w))
			b.WriteByte('\'')
			if t.Prefix && j == len(t.Words)-1 {
				b.WriteString(":*")
			}
		}
		b.WriteByte(')')
	}
	return b.String()
}

// Highlight is text escaped for HTML with every match of a term in a <mark> element: a word
// alone, or a phrase's words in a row as one mark. Both stores mark in Go, the same way.
func (ts SearchTerms) Highlight(text string) string {
	toks := Words(text)
	marked := make([]bool, len(toks))
	// A span of tokens i..j is one mark when a phrase matched it; joined[j] says token j
	// continues the mark of token j-1.
	joined := make([]bool, len(toks))
	for _, t := range ts {
		n := len(t.Words)
		for i := 0; i+n <= len(toks); i++ {
			if !t.matchesAt(toks[i : i+n]) {
				continue
			}
			for k := i; k < i+n; k++ {
				marked[k] = true
				if k > i {
					joined[k] = true
				}
			}
		}
	}
	var b strings.Builder
	at := 0
	for i := 0; i < len(toks); i++ {
		if !marked[i] {
			continue
		}
		j := i
		for j+1 < len(toks) && marked[j+1] && joined[j+1] {
			j++
		}
		b.WriteString(html.EscapeString(text[at:toks[i].Start]))
		b.WriteString("<mark>")
		b.WriteString(html.EscapeString(text[toks[i].Start:toks[j].End]))
		b.WriteString("</mark>")
		at, i = toks[j].End, j
	}
	b.WriteString(html.EscapeString(text[at:]))
	return b.String()
}

// matchesAt reports whether the term's words are toks, in order.
func (t SearchTerm) matchesAt(toks []WordToken) bool {
	for k, w := range t.Words {
		if t.Prefix && k == len(t.Words)-1 {
			if !strings.HasPrefix(toks[k].Word, w) {
				return false
			}
		} else if toks[k].Word != w {
			return false
		}
	}
	return true
}
