package subtitles

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Strict format checks, stricter than players: what a file we write must satisfy. Each
// returns every problem found (up to maxProblems), joined, with 1-based line numbers.

const maxProblems = 20

// Grammar of timing lines, tags and character references. Built per call: validators run
// in tests and tools, and the package keeps no state.
func srtTimingRE() *regexp.Regexp {
	return regexp.MustCompile(`^(\d{2,}):([0-5]\d):([0-5]\d),(\d{3}) --> (\d{2,}):([0-5]\d):([0-5]\d),(\d{3})$`)
}

type vttGrammar struct{ timing, tag, ref *regexp.Regexp }

func newVTTGrammar() vttGrammar {
	return vttGrammar{
		timing: regexp.MustCompile(`^(?:(\d{2,}):)?([0-5]\d):([0-5]\d)\.(\d{3})[ \t]+-->[ \t]+(?:(\d{2,}):)?([0-5]\d):([0-5]\d)\.(\d{3})((?:[ \t]+\S+)*)$`),
		tag:    regexp.MustCompile(`^<(?:/(?:c|i|b|u|v|ruby|rt|lang)|(?:c|i|b|u|ruby|rt)(?:\.[^\s.&<>]+)*|(?:v|lang)(?:\.[^\s.&<>]+)*[ \t][^&<>\n]*(?:&(?:amp|lt|gt);[^&<>\n]*)*|(?:\d{2,}:)?[0-5]\d:[0-5]\d\.\d{3})>`),
		ref:    regexp.MustCompile(`^&(?:amp|lt|gt|nbsp|lrm|rlm|#\d+|#[xX][0-9a-fA-F]+);`),
	}
}

type problems struct {
	errs []error
	more int
}

func (p *problems) add(line int, format string, args ...any) {
	if len(p.errs) >= maxProblems {
		p.more++
		return
	}
	p.errs = append(p.errs, fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...)))
}

func (p *problems) err(kind string) error {
	if len(p.errs) == 0 {
		return nil
	}
	if p.more > 0 {
		p.errs = append(p.errs, fmt.Errorf("and %d more", p.more))
	}
	return fmt.Errorf("subtitles: invalid %s: %w", kind, errors.Join(p.errs...))
}

// splitLines splits a file into lines, requiring one kind of line ending throughout (LF or
// CRLF, no bare CR), valid UTF-8 and a final line ending.
func splitLines(b []byte, p *problems) []string {
	b = bytes.TrimPrefix(b, []byte("\uFEFF"))
	if !utf8.Valid(b) {
		p.add(1, "not valid UTF-8")
	}
	crlf := bytes.Contains(b, []byte("\r\n"))
	if crlf && bytes.Count(b, []byte("\r\n")) != bytes.Count(b, []byte("\n")) {
		p.add(1, "mixed CRLF and LF line endings")
	}
	s := string(b)
	if crlf {
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	if i := strings.IndexByte(s, '\r'); i >= 0 {
		p.add(strings.Count(s[:i], "\n")+1, "bare CR")
	}
	if s == "" {
		return nil
	}
	if !strings.HasSuffix(s, "\n") {
		p.add(strings.Count(s, "\n")+1, "no line ending at the end of the file")
		s += "\n"
	}
	return strings.Split(s[:len(s)-1], "\n")
}

func clock(h, m, s, ms string) time.Duration {
	hh, _ := strconv.Atoi(h)
	mm, _ := strconv.Atoi(m)
	ss, _ := strconv.Atoi(s)
	mss, _ := strconv.Atoi(ms)
	return time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute + time.Duration(ss)*time.Second + time.Duration(mss)*time.Millisecond
}

// ValidateSRT checks SubRip structure: blocks of a sequence number counting from 1, a
// "HH:MM:SS,mmm --> HH:MM:SS,mmm" line with end after start and starts in order, one or
// more non-blank text lines without "-->" or control characters, one blank line between
// blocks, consistent line endings. An empty file is valid (no cues).
func ValidateSRT(b []byte) error {
	var p problems
	lines := splitLines(b, &p)
	srtTiming := srtTimingRE()
	var prevStart time.Duration
	want := 1
	for i := 0; i < len(lines); {
		if lines[i] == "" {
			p.add(i+1, "blank line outside a block")
			i++
			continue
		}
		if lines[i] != strconv.Itoa(want) {
			p.add(i+1, "sequence number %q, want %d", lines[i], want)
		}
		want++
		i++
		if i >= len(lines) {
			p.add(i, "block without timing")
			break
		}
		m := srtTiming.FindStringSubmatch(lines[i])
		if m == nil {
			p.add(i+1, "bad timing line %q", lines[i])
		} else {
			start, end := clock(m[1], m[2], m[3], m[4]), clock(m[5], m[6], m[7], m[8])
			if end <= start {
				p.add(i+1, "end %s not after start %s", m[5]+":"+m[6]+":"+m[7]+","+m[8], m[1]+":"+m[2]+":"+m[3]+","+m[4])
			}
			if start < prevStart {
				p.add(i+1, "starts before the previous cue")
			}
			prevStart = start
		}
		i++
		text := 0
		for ; i < len(lines) && lines[i] != ""; i++ {
			text++
			checkText(lines[i], i+1, &p)
		}
		if text == 0 {
			p.add(i+1, "block without text")
		}
		if i < len(lines) { // the blank separator
			i++
			if i == len(lines) {
				p.add(i, "blank line at the end of the file")
			}
		}
	}
	return p.err("SRT")
}

// checkText applies the rules every text line shares.
func checkText(l string, n int, p *problems) {
	switch {
	case strings.TrimSpace(l) == "":
		p.add(n, "blank text line")
	case strings.Contains(l, "-->"):
		p.add(n, `"-->" in text`)
	case strings.ContainsFunc(l, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		p.add(n, "control character in text")
	}
}

// ValidateVTT checks WebVTT (W3C): the "WEBVTT" header line and a blank line, then NOTE
// blocks and cues separated by blank lines; a cue is an optional unique identifier without
// "-->", a timing line ("[hh:]mm:ss.ttt --> [hh:]mm:ss.ttt", end after start, starts in
// order, known settings at most once each) and text lines. Text is checked strictly: &
// only as &amp; &lt; &gt; &nbsp; &lrm; &rlm; or a numeric reference, < only as a WebVTT tag,
// no raw >, no "-->", end tags matching open tags, and an unclosed <v> only when it spans
// the whole cue.
func ValidateVTT(b []byte) error {
	var p problems
	lines := splitLines(b, &p)
	if len(lines) == 0 || !(lines[0] == "WEBVTT" || strings.HasPrefix(lines[0], "WEBVTT ") || strings.HasPrefix(lines[0], "WEBVTT\t")) {
		p.add(1, "missing WEBVTT header")
		return p.err("WebVTT")
	}
	if strings.Contains(lines[0], "-->") {
		p.add(1, `"-->" in the header`)
	}
	i := 1
	if i < len(lines) && lines[i] != "" {
		p.add(i+1, "the header must be followed by a blank line")
	}
	g := newVTTGrammar()
	ids := map[string]int{}
	var prevStart time.Duration
	cues := 0
	for i < len(lines) {
		if lines[i] == "" {
			i++
			continue
		}
		first := i
		end := i
		for end < len(lines) && lines[end] != "" {
			end++
		}
		block := lines[first:end]
		i = end
		switch {
		case block[0] == "NOTE" || strings.HasPrefix(block[0], "NOTE ") || strings.HasPrefix(block[0], "NOTE\t"):
			for k, l := range block {
				if strings.Contains(l, "-->") {
					p.add(first+k+1, `"-->" in a NOTE`)
				}
			}
			continue
		case (block[0] == "STYLE" || block[0] == "REGION") && cues == 0:
			continue
		}
		t := 0
		if !strings.Contains(block[0], "-->") {
			if prev, dup := ids[block[0]]; dup {
				p.add(first+1, "identifier %q already used on line %d", block[0], prev)
			}
			ids[block[0]] = first + 1
			t = 1
		}
		if t >= len(block) {
			p.add(first+1, "block without timing")
			continue
		}
		cues++
		m := g.timing.FindStringSubmatch(block[t])
		if m == nil {
			p.add(first+t+1, "bad timing line %q", block[t])
		} else {
			start, stop := clock(m[1], m[2], m[3], m[4]), clock(m[5], m[6], m[7], m[8])
			if stop <= start {
				p.add(first+t+1, "end not after start")
			}
			if start < prevStart {
				p.add(first+t+1, "starts before the previous cue")
			}
			prevStart = start
			checkSettings(m[9], first+t+1, &p)
		}
		if t+1 >= len(block) {
			p.add(first+t+2, "cue without text")
			continue
		}
		g.checkCueText(block[t+1:], first+t+2, &p)
	}
	return p.err("WebVTT")
}

func checkSettings(s string, n int, p *problems) {
	seen := map[string]bool{}
	for _, f := range strings.Fields(s) {
		name, value, ok := strings.Cut(f, ":")
		switch {
		case !ok || value == "":
			p.add(n, "bad cue setting %q", f)
		case name != "vertical" && name != "line" && name != "position" && name != "size" && name != "align" && name != "region":
			p.add(n, "unknown cue setting %q", name)
		case seen[name]:
			p.add(n, "cue setting %q repeated", name)
		}
		seen[name] = true
	}
}

// token is the character reference (after &) or tag (after <) that s starts with, or "" when
// s starts with a bare &, < or >, which cue text must escape.
func (g vttGrammar) token(s string) string {
	switch s[0] {
	case '&':
		return g.ref.FindString(s)
	case '<':
		return g.tag.FindString(s)
	}
	return ""
}

// checkCueText checks the escaping and markup of one cue's text lines (first is the line
// number of the first).
func (g vttGrammar) checkCueText(text []string, first int, p *problems) {
	var stack []string
	voices, unclosedVoiceAt := 0, -1
	for k, l := range text {
		n := first + k
		checkText(l, n, p)
		for j := 0; j < len(l); {
			c := l[j]
			if c != '&' && c != '<' && c != '>' {
				j++
				continue
			}
			tok := g.token(l[j:])
			if tok == "" {
				p.add(n, "unescaped %c at column %d", c, j+1)
				j++
				continue
			}
			if c == '<' {
				name := strings.TrimLeft(tok[1:len(tok)-1], "/")
				name = strings.FieldsFunc(name, func(r rune) bool { return r == '.' || r == ' ' || r == '\t' })[0]
				switch {
				case strings.HasPrefix(tok, "</"):
					if len(stack) == 0 || stack[len(stack)-1] != name {
						p.add(n, "end tag %s does not close the open tag", tok)
					} else {
						stack = stack[:len(stack)-1]
					}
				case strings.ContainsRune("0123456789", rune(name[0])): // cue timestamp
				default:
					if name == "v" {
						voices++
						if k == 0 && j == 0 {
							unclosedVoiceAt = len(stack)
						}
					}
					stack = append(stack, name)
				}
			}
			j += len(tok)
		}
	}
	// Only a voice span covering the whole cue may be left open.
	for d, name := range stack {
		if !(name == "v" && voices == 1 && d == unclosedVoiceAt && d == 0) {
			p.add(first+len(text)-1, "tag <%s> left open", name)
		}
	}
}
