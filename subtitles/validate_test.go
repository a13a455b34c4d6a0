package subtitles

import (
	"strings"
	"testing"
)

func TestValidateSRT(t *testing.T) {
	good := "1\n00:00:01,000 --> 00:00:02,000\nHello\nworld\n\n2\n00:00:02,500 --> 00:00:03,000\nAT&T <3\n"
	for name, in := range map[string]string{
		"LF":   good,
		"CRLF": strings.ReplaceAll(good, "\n", "\r\n"),
		"BOM":  "\uFEFF" + good,
		"100h": "1\n100:00:01,000 --> 100:00:02,000\nx\n",
	} {
		if err := ValidateSRT([]byte(in)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, in := range map[string]string{
		"numbered from 0":    "0\n00:00:01,000 --> 00:00:02,000\nx\n",
		"skipped number":     "1\n00:00:01,000 --> 00:00:02,000\nx\n\n3\n00:00:03,000 --> 00:00:04,000\ny\n",
		"dot for comma":      "1\n00:00:01.000 --> 00:00:02,000\nx\n",
		"one-digit hour":     "1\n0:00:01,000 --> 00:00:02,000\nx\n",
		"61 seconds":         "1\n00:00:61,000 --> 00:01:02,000\nx\n",
		"no spaces":          "1\n00:00:01,000-->00:00:02,000\nx\n",
		"end before start":   "1\n00:00:02,000 --> 00:00:01,000\nx\n",
		"empty cue":          "1\n00:00:01,000 --> 00:00:02,000\n\n",
		"no text":            "1\n00:00:01,000 --> 00:00:02,000\n",
		"arrow in text":      "1\n00:00:01,000 --> 00:00:02,000\na --> b\n",
		"not monotonic":      "1\n00:00:05,000 --> 00:00:06,000\nx\n\n2\n00:00:01,000 --> 00:00:02,000\ny\n",
		"two blank lines":    "1\n00:00:01,000 --> 00:00:02,000\nx\n\n\n2\n00:00:03,000 --> 00:00:04,000\ny\n",
		"no final newline":   "1\n00:00:01,000 --> 00:00:02,000\nx",
		"trailing blank":     "1\n00:00:01,000 --> 00:00:02,000\nx\n\n",
		"mixed line endings": "1\r\n00:00:01,000 --> 00:00:02,000\nx\r\n",
		"bare CR":            "1\n00:00:01,000 --> 00:00:02,000\nx\ry\n",
		"control character":  "1\n00:00:01,000 --> 00:00:02,000\nx\x01\n",
		"invalid UTF-8":      "1\n00:00:01,000 --> 00:00:02,000\n\xff\n",
	} {
		if err := ValidateSRT([]byte(in)); err == nil {
			t.Errorf("%s: accepted %q", name, in)
		}
	}
}

func TestValidateVTT(t *testing.T) {
	good := "WEBVTT\n\nNOTE made by scribehook\n\n1\n00:00:01.000 --> 00:00:02.000 align:center line:90%\n<v Anna &amp; Co>Hello &lt;3\n" +
		"world\n\nid-2\n00:02.500 --> 00:03.000\n<v A>-Yes.</v>\n<v B>-No <i>way</i> &gt; <00:00:02.700>x &#39; &nbsp;</v>\n"
	for name, in := range map[string]string{
		"LF":     good,
		"CRLF":   strings.ReplaceAll(good, "\n", "\r\n"),
		"BOM":    "\uFEFF" + good,
		"title":  "WEBVTT - my title\n\n00:01.000 --> 00:02.000\nx\n",
		"header": "WEBVTT\n",
	} {
		if err := ValidateVTT([]byte(in)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	cue := func(text string) string { return "WEBVTT\n\n00:01.000 --> 00:02.000\n" + text + "\n" }
	for name, in := range map[string]string{
		"no header":          "1\n00:01.000 --> 00:02.000\nx\n",
		"WEBVTTX":            "WEBVTTX\n\n00:01.000 --> 00:02.000\nx\n",
		"no blank after hdr": "WEBVTT\n00:01.000 --> 00:02.000\nx\n",
		"comma for dot":      "WEBVTT\n\n00:00:01,000 --> 00:00:02,000\nx\n",
		"one-digit minute":   "WEBVTT\n\n0:01.000 --> 00:02.000\nx\n",
		"end before start":   "WEBVTT\n\n00:02.000 --> 00:01.000\nx\n",
		"not monotonic":      "WEBVTT\n\n00:05.000 --> 00:06.000\nx\n\n00:01.000 --> 00:02.000\ny\n",
		"duplicate id":       "WEBVTT\n\na\n00:01.000 --> 00:02.000\nx\n\na\n00:03.000 --> 00:04.000\ny\n",
		"unknown setting":    "WEBVTT\n\n00:01.000 --> 00:02.000 color:red\nx\n",
		"repeated setting":   "WEBVTT\n\n00:01.000 --> 00:02.000 align:start align:end\nx\n",
		"raw ampersand":      cue("AT&T"),
		"unknown entity":     cue("&copy; 2024"),
		"raw less-than":      cue("<3"),
		"raw greater-than":   cue("x > y"),
		"unknown tag":        cue("<inaudible>"),
		"arrow in text":      cue("a --> b"),
		"unclosed italics":   cue("<i>x"),
		"mismatched end tag": cue("<b>x</i>"),
		"two open voices":    cue("<v A>x\n<v B>y"),
		"voice not at start": cue("x <v A>y"),
		"raw & in voice":     cue("<v A&B>x"),
		"cue without text":   "WEBVTT\n\n00:01.000 --> 00:02.000\n",
		"arrow in NOTE":      "WEBVTT\n\nNOTE a --> b\n",
	} {
		if err := ValidateVTT([]byte(in)); err == nil {
			t.Errorf("%s: accepted %q", name, in)
		}
	}
}

// TestValidateVTTCueText pins what the cue text check reports: a bare &, < or > by its column,
// and the tags that do not nest.
func TestValidateVTTCueText(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"AT&T", "line 4: unescaped & at column 3"},
		{"&copy; 2024", "line 4: unescaped & at column 1"},
		{"x <3", "line 4: unescaped < at column 3"},
		{"x > y", "line 4: unescaped > at column 3"},
		{"<inaudible>", "line 4: unescaped < at column 1\nline 4: unescaped > at column 11"},
		{"<v A&B>x", "line 4: unescaped < at column 1\nline 4: unescaped & at column 5\nline 4: unescaped > at column 7"},
		{"<b>x</i>", "line 4: end tag </i> does not close the open tag\nline 4: tag <b> left open"},
		{"x <v A>y", "line 4: tag <v> left open"},
	} {
		err := ValidateVTT([]byte("WEBVTT\n\n00:01.000 --> 00:02.000\n" + tc.text + "\n"))
		if want := "subtitles: invalid WebVTT: " + tc.want; err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %s", tc.text, err, want)
		}
	}
}
