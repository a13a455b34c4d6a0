// Package termtext makes text that came from outside (job ids, transcripts, errors a webhook
// target answered, reasons) safe to print on an operator's terminal: no escape sequence reaches
// it (ESC[2J clears the screen, ESC]0;…BEL retitles the window, OSC 8 forges links), no line
// break forges a row of a table, and no bidirectional override reorders what is shown. The
// commands print every such value through it.
package termtext

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Line returns s as one line of plain text: tabs and line breaks become spaces (a value stays in
// its column and its row), and every other control character, bidirectional control or invalid
// byte is shown escaped (\x1b, \u202e, \xff) instead of being sent. Printable text, non-ASCII
// letters included, is unchanged.
func Line(s string) string { return clean(s, true) }

// Text is Line for text of several lines (a transcript): line feeds are kept, the rest as Line.
func Text(s string) string { return clean(s, false) }

func clean(s string, oneLine bool) string {
	if safe(s, oneLine) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			escape(&b, `\x`, uint64(s[i]), 2)
		case r == '\n' && !oneLine:
			b.WriteByte('\n')
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteByte(' ')
		case unsafeRune(r) && r < utf8.RuneSelf:
			escape(&b, `\x`, uint64(r), 2) // \x1b
		case unsafeRune(r):
			escape(&b, `\u`, uint64(r), 4) // \u202e
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// escape writes prefix and v in hexadecimal, at least width digits.
func escape(b *strings.Builder, prefix string, v uint64, width int) {
	b.WriteString(prefix)
	h := strconv.FormatUint(v, 16)
	b.WriteString(strings.Repeat("0", max(width-len(h), 0)))
	b.WriteString(h)
}

// safe reports whether s needs no change: the common case costs one pass and no allocation.
func safe(s string, oneLine bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && !(c == '\n' && !oneLine) || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || unsafeRune(r) {
			return false
		}
		i += size
	}
	return true
}

// unsafeRune: C0 and C1 controls, DEL, and the bidirectional controls (marks, embeddings,
// overrides, isolates) that make a terminal show text in another order than it is.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
