package termtext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	for _, tc := range []struct{ in, line, text string }{
		{"job-1", "job-1", "job-1"},
		{"Grüße, 日本語 ✓", "Grüße, 日本語 ✓", "Grüße, 日本語 ✓"},
		{"\x1b]0;owned\x07title", `\x1b]0;owned\x07title`, `\x1b]0;owned\x07title`},
		{"\x1b[2Jcleared", `\x1b[2Jcleared`, `\x1b[2Jcleared`},
		{"id\n9\tdone", "id 9 done", "id\n9 done"},
		{"a\r\nb", "a  b", "a \nb"},
		{"\u009b31m", `\u009b31m`, `\u009b31m`},
		{"abc\u202edcba", `abc\u202edcba`, `abc\u202edcba`},
		{"\u2066x\u2069", `\u2066x\u2069`, `\u2066x\u2069`},
		{"bad \xff\xfe byte", `bad \xff\xfe byte`, `bad \xff\xfe byte`},
		{"del\x7f", `del\x7f`, `del\x7f`},
		{"nul\x00", `nul\x00`, `nul\x00`},
	} {
		if got := Line(tc.in); got != tc.line {
			t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.line)
		}
		if got := Text(tc.in); got != tc.text {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.text)
		}
	}
}

// A printable value is returned as it is, without a copy.
func TestLineKeepsSafeText(t *testing.T) {
	s := strings.Repeat("utterance ", 100)
	if n := testing.AllocsPerRun(100, func() { _ = Line(s) }); n != 0 {
		t.Errorf("Line of safe text allocated %v times", n)
	}
}

func FuzzLine(f *testing.F) {
	for _, s := range []string{"x", "\x1b[31mred", "a\nb", "\u202e", "\xff", "é\u0085"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Line(s), Text(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("%q: invalid UTF-8 out: %q", s, out)
			}
			for _, r := range out {
				if unsafeRune(r) && r != '\n' {
					t.Fatalf("%q: %U left in %q", s, r, out)
				}
			}
			if Line(out) != strings.ReplaceAll(out, "\n", " ") {
				t.Fatalf("%q: cleaning %q again changes it", s, out)
			}
		}
		if strings.Contains(Line(s), "\n") {
			t.Fatalf("%q: a line break in Line", s)
		}
		if safe(s, true) && Line(s) != s {
			t.Fatalf("%q: safe text changed", s)
		}
	})
}
