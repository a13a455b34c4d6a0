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
	// Each bad file with what the check reports, after "subtitles: invalid WebVTT: ": a bare
	// &, < or > by its column, tags that do not nest, and the structure's faults by line.
	cue := func(text string) string { return "WEBVTT\n\n00:01.000 --> 00:02.000\n" + text + "\n" }
	for name, tc := range map[string]struct{ in, want string }{
		"no header":          {"1\n00:01.000 --> 00:02.000\nx\n", "line 1: missing WEBVTT header"},
		"WEBVTTX":            {"WEBVTTX\n\n00:01.000 --> 00:02.000\nx\n", "line 1: missing WEBVTT header"},
		"no blank after hdr": {"WEBVTT\n00:01.000 --> 00:02.000\nx\n", "line 2: the header must be followed by a blank line"},
		"comma for dot":      {"WEBVTT\n\n00:00:01,000 --> 00:00:02,000\nx\n", `line 3: bad timing line "00:00:01,000 --> 00:00:02,000"`},
		"one-digit minute":   {"WEBVTT\n\n0:01.000 --> 00:02.000\nx\n", `line 3: bad timing line "0:01.000 --> 00:02.000"`},
		"end before start":   {"WEBVTT\n\n00:02.000 --> 00:01.000\nx\n", "line 3: end not after start"},
		"not monotonic":      {"WEBVTT\n\n00:05.000 --> 00:06.000\nx\n\n00:01.000 --> 00:02.000\ny\n", "line 6: starts before the previous cue"},
		"duplicate id":       {"WEBVTT\n\na\n00:01.000 --> 00:02.000\nx\n\na\n00:03.000 --> 00:04.000\ny\n", `line 7: identifier "a" already used on line 3`},
		"unknown setting":    {"WEBVTT\n\n00:01.000 --> 00:02.000 color:red\nx\n", `line 3: unknown cue setting "color"`},
		"repeated setting":   {"WEBVTT\n\n00:01.000 --> 00:02.000 align:start align:end\nx\n", `line 3: cue setting "align" repeated`},
		"raw ampersand":      {cue("AT&T"), "line 4: unescaped & at column 3"},
		"unknown entity":     {cue("&copy; 2024"), "line 4: unescaped & at column 1"},
		"raw less-than":      {cue("<3"), "line 4: unescaped < at column 1"},
		"raw greater-than":   {cue("x > y"), "line 4: unescaped > at column 3"},
		"unknown tag":        {cue("<inaudible>"), "line 4: unescaped < at column 1\nline 4: unescaped > at column 11"},
		"arrow in text":      {cue("a --> b"), "line 4: \"-->\" in text\nline 4: unescaped > at column 5"},
		"unclosed italics":   {cue("<i>x"), "line 4: tag <i> left open"},
		"mismatched end tag": {cue("<b>x</i>"), "line 4: end tag </i> does not close the open tag\nline 4: tag <b> left open"},
		"two open voices":    {cue("<v A>x\n<v B>y"), "line 5: tag <v> left open\nline 5: tag <v> left open"},
		"voice not at start": {cue("x <v A>y"), "line 4: tag <v> left open"},
		"raw & in voice":     {cue("<v A&B>x"), "line 4: unescaped < at column 1\nline 4: unescaped & at column 5\nline 4: unescaped > at column 7"},
		"cue without text":   {"WEBVTT\n\n00:01.000 --> 00:02.000\n", "line 4: cue without text"},
		"arrow in NOTE":      {"WEBVTT\n\nNOTE a --> b\n", `line 3: "-->" in a NOTE`},
	} {
		err := ValidateVTT([]byte(tc.in))
		if want := "subtitles: invalid WebVTT: " + tc.want; err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", name, err, want)
		}
	}
}
