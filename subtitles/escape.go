package subtitles

import (
	"strings"
)

// astisubEscape is what astisub writes for text in SRT and WebVTT.
func astisubEscape(s string) string {
	if !needsEscape(s, 0xc2) { // 0xc2: first byte of U+00A0
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '\u00a0':
			b.WriteString("&nbsp;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// needsEscape reports whether s has '&', '<' or the extra byte (a byte loop: ContainsAny
// with a non-ASCII set is slow, and this runs for every line).
func needsEscape(s string, extra byte) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '&' || c == '<' || c == extra {
			return true
		}
	}
	return false
}

// vttEscape escapes cue text for WebVTT: &, < and > always.
func vttEscape(s string) string {
	if !needsEscape(s, '>') {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// vttAnnotation makes a speaker name safe inside <v …>: no line breaks, no raw &, < or >.
func vttAnnotation(name string) string {
	return vttEscape(cleanText(name))
}

// srtEscape writes SRT text literally, escaping only what an HTML-ish SRT reader (astisub,
// most players) would take for markup: "<" before a letter, "/" or "!" (a tag), and "&"
// before something that reads as an entity. "AT&T" and "<3" stay as they are.
func srtEscape(s string) string {
	if !strings.ContainsAny(s, "&<") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '<' && i+1 < len(s) && isTagStart(s[i+1]):
			b.WriteString("&lt;")
		case c == '&' && looksLikeEntity(s[i+1:]):
			b.WriteString("&amp;")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isTagStart(c byte) bool {
	return c == '/' || c == '!' || c == '?' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// looksLikeEntity reports text after "&" that an HTML reader could decode: "#…", a name
// followed by ";", or one of the legacy names browsers decode without ";".
func looksLikeEntity(s string) bool {
	if strings.HasPrefix(s, "#") {
		return true
	}
	n := 0
	for n < len(s) && (('a' <= s[n] && s[n] <= 'z') || ('A' <= s[n] && s[n] <= 'Z') || ('0' <= s[n] && s[n] <= '9')) {
		n++
	}
	if n == 0 {
		return false
	}
	if n < len(s) && s[n] == ';' {
		return true
	}
	for _, legacy := range []string{"amp", "lt", "gt", "quot", "nbsp", "copy", "reg", "AMP", "LT", "GT", "QUOT"} {
		if strings.HasPrefix(s, legacy) {
			return true
		}
	}
	return false
}
