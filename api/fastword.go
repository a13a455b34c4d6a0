package api

import (
	"strconv"
	"unicode/utf8"
)

// decodeWordFast decodes the common form of a word, an object of the four known members with a
// plain string and numbers, straight into w without encoding/json: a 2-hour result has 20,000
// of them, and each json.Unmarshal validates its bytes again, allocates a decoder and goes
// through reflection. It reports false, leaving w untouched, for anything else (an unknown or
// case-folded member, escapes or invalid UTF-8 in the string, null, a number out of range,
// malformed JSON), which the caller then decodes the general way. What it accepts is valid
// JSON that encoding/json decodes to exactly the same Word: present members assigned in order
// (a repeated member's last value wins), the others left as they were, Extra cleared.
func decodeWordFast(b []byte, w *Word) bool {
	out := *w
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			key, next, ok := plainString(b, i)
			if !ok {
				return false
			}
			i = skipSpace(b, next)
			if i >= len(b) || b[i] != ':' {
				return false
			}
			i = skipSpace(b, i+1)
			switch string(key) {
			case "word":
				s, next, ok := plainString(b, i)
				if !ok || !utf8.Valid(s) {
					return false
				}
				out.Word, i = string(s), next
			case "start", "end", "confidence":
				f, next, ok := jsonFloat(b, i)
				if !ok {
					return false
				}
				switch key[0] {
				case 's':
					out.Start = f
				case 'e':
					out.End = f
				default:
					out.Confidence = f
				}
				i = next
			default:
				return false
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return false
			}
			if b[i] == '}' {
				i++
				break
			}
			if b[i] != ',' {
				return false
			}
			i = skipSpace(b, i+1)
		}
	}
	if skipSpace(b, i) != len(b) {
		return false
	}
	out.Extra = nil
	*w = out
	return true
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

// jsonFloat reads the JSON number at b[i] (strictly the JSON grammar) as encoding/json decodes
// it into a float64, and the index after it; false when it is no number or out of range.
func jsonFloat(b []byte, i int) (f float64, next int, ok bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && '1' <= b[j] && b[j] <= '9':
		j = digitsEnd(b, j)
	default:
		return 0, 0, false
	}
	if j < len(b) && b[j] == '.' {
		k := j + 1
		if j = digitsEnd(b, k); j == k {
			return 0, 0, false // a fraction needs a digit
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := j
		if j = digitsEnd(b, k); j == k {
			return 0, 0, false // an exponent needs a digit
		}
	}
	f, err := strconv.ParseFloat(string(b[i:j]), 64) // does not escape: no allocation
	if err != nil {
		return 0, 0, false
	}
	return f, j, true
}

// digitsEnd returns the index after the run of ASCII digits that starts at b[j].
func digitsEnd(b []byte, j int) int {
	for j < len(b) && '0' <= b[j] && b[j] <= '9' {
		j++
	}
	return j
}
