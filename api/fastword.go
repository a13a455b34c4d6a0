package api

import (
	"encoding/json"
	"reflect"
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
	// decodeMembers' loop, written out: words are the hot path (20,000 in a 2-hour result, four
	// members each), and a call of the value closure per member costs them a few per cent.
	m := objectMembers(b)
	for {
		key, i, more := m.member()
		if !more {
			break
		}
		next, ok := 0, false
		switch string(key) {
		case "word":
			var s []byte
			s, next, ok = plainString(b, i)
			ok = ok && utf8.Valid(s)
			out.Word = string(s)
		case "start", "end", "confidence":
			next, ok = floatMember(timeField(key[0], &out.Start, &out.End, &out.Confidence), b, i)
		}
		if !ok {
			return false
		}
		m.after(next)
	}
	if !m.ok() {
		return false
	}
	out.Extra = nil
	*w = out
	return true
}

// decodeMembers walks the object b for a fast decoding: value reads the value of each member
// from b[i] (key as written, escapes not undone) and returns the index after it, or false to
// decline. It reports whether every member was taken and b is the object and nothing else but
// white space.
func decodeMembers(b []byte, value func(key []byte, i int) (next int, ok bool)) bool {
	m := objectMembers(b)
	for {
		key, i, more := m.member()
		if !more {
			return m.ok()
		}
		next, ok := value(key, i)
		if !ok {
			return false
		}
		m.after(next)
	}
}

// timeField is the one of start, end and confidence whose member name starts with c.
func timeField(c byte, start, end, confidence *float64) *float64 {
	switch c {
	case 's':
		return start
	case 'e':
		return end
	}
	return confidence
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

// numberEnd returns the index after the JSON number at b[i] (strictly the JSON grammar), and
// whether it is an integer (no fraction, no exponent); false when there is none.
func numberEnd(b []byte, i int) (end int, integer, ok bool) {
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
		return 0, false, false
	}
	integer = true
	if j < len(b) && b[j] == '.' {
		k := j + 1
		if j = digitsEnd(b, k); j == k {
			return 0, false, false // a fraction needs a digit
		}
		integer = false
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := j
		if j = digitsEnd(b, k); j == k {
			return 0, false, false // an exponent needs a digit
		}
		integer = false
	}
	return j, integer, true
}

// floatMember reads the JSON number at b[i] into *dst as encoding/json decodes it into a
// float64, and returns the index after it; false when it is no number or out of range.
func floatMember(dst *float64, b []byte, i int) (int, bool) {
	j, _, ok := numberEnd(b, i)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b[i:j]), 64) // does not escape: no allocation
	if err != nil {
		return 0, false
	}
	*dst = f
	return j, true
}

// intMember reads the JSON integer at b[i] (no fraction, no exponent) into *dst as
// encoding/json decodes it into an int, and returns the index after it; false for anything
// else, or out of range.
func intMember(dst *int, b []byte, i int) (int, bool) {
	j, integer, ok := numberEnd(b, i)
	if !ok || !integer {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b[i:j]), 10, strconv.IntSize)
	if err != nil {
		return 0, false
	}
	*dst = int(n)
	return j, true
}

// digitsEnd returns the index after the run of ASCII digits that starts at b[j].
func digitsEnd(b []byte, j int) int {
	for j < len(b) && '0' <= b[j] && b[j] <= '9' {
		j++
	}
	return j
}

// decodeUtteranceFast decodes the common form of an utterance into u, which must be the zero
// Utterance (as encoding/json gives each element of a fresh slice; otherwise it reports false):
// an object of the known members with plain strings, JSON numbers (an integer channel and
// speaker), and words of the form decodeWordFast takes. Like decodeWordFast it reports false,
// leaving u untouched, for anything else, which the caller then decodes the general way; what
// it accepts is valid JSON that encoding/json decodes to exactly the same Utterance. It spares
// the 2-hour result a validation of each utterance's bytes by encoding/json, and the
// reflective decoding of its members.
func decodeUtteranceFast(b []byte, u *Utterance) bool {
	if u.Words != nil || u.Speaker != nil || u.Extra != nil || u.Text != "" || u.Language != "" ||
		u.Start != 0 || u.End != 0 || u.Confidence != 0 || u.Channel != 0 {
		return false
	}
	var out Utterance
	if !decodeMembers(b, func(key []byte, i int) (int, bool) {
		switch string(key) {
		case "start", "end", "confidence":
			return floatMember(timeField(key[0], &out.Start, &out.End, &out.Confidence), b, i)
		case "channel":
			return intMember(&out.Channel, b, i)
		case "speaker":
			if hasLiteral(b, i, "null") {
				out.Speaker = nil
				return i + 4, true
			}
			out.Speaker = new(int)
			return intMember(out.Speaker, b, i)
		case "text":
			return stringMember(&out.Text, b, i)
		case "language":
			return stringMember(&out.Language, b, i)
		case "words":
			return arrayMember(&out.Words, b, i, func(v []byte) (Word, bool) {
				var w Word
				ok := v[0] == '{' && decodeWordFast(v, &w)
				return w, ok
			})
		}
		return 0, false
	}) {
		return false
	}
	*u = out
	return true
}

// hasLiteral reports whether b[i:] starts with lit.
func hasLiteral(b []byte, i int, lit string) bool {
	return i <= len(b) && len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
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

// stringMember reads the JSON string at b[i] into *dst as fastString does, and returns the
// index after it.
func stringMember(dst *string, b []byte, i int) (int, bool) {
	s, next, ok := fastString(b, i)
	if ok {
		*dst = s
	}
	return next, ok
}

// decodeTranscriptionFast decodes the common form of a transcription into t, which must be the
// zero Transcription: its transcript, languages, and utterances of the form
// decodeUtteranceFast takes. As the other fast decodings, it reports false for anything else
// (unknown members, sentences, subtitles, other types), leaving t untouched.
func decodeTranscriptionFast(b []byte, t *Transcription) bool {
	if t.FullTranscript != "" || t.Languages != nil || t.Utterances != nil || t.Sentences != nil ||
		t.Subtitles != nil || t.Extra != nil {
		return false
	}
	var out Transcription
	if !decodeMembers(b, func(key []byte, i int) (int, bool) {
		switch string(key) {
		case "full_transcript":
			return stringMember(&out.FullTranscript, b, i)
		case "languages":
			return arrayMember(&out.Languages, b, i, func(v []byte) (string, bool) {
				return stringValue(v)
			})
		case "utterances":
			return arrayMember(&out.Utterances, b, i, func(v []byte) (Utterance, bool) {
				var u Utterance
				ok := decodeUtteranceFast(v, &u)
				return u, ok
			})
		}
		return 0, false
	}) {
		return false
	}
	*t = out
	return true
}

// arrayMember reads the array (or null) at b[i] into *dst with fastArray, and returns the index
// after it. It declines when *dst holds elements already: encoding/json decodes an array member
// given twice into the first one's elements, which is left to it.
func arrayMember[T any](dst *[]T, b []byte, i int, elem func([]byte) (T, bool)) (int, bool) {
	if *dst != nil {
		return 0, false
	}
	s, next, ok := fastArray(b, i, elem)
	*dst = s
	return next, ok
}

// fastArray reads the array (or null) at b[i] into a new slice, each element decoded by elem
// from its bytes (nil for null, as encoding/json sets a slice from null).
func fastArray[T any](b []byte, i int, elem func([]byte) (T, bool)) ([]T, int, bool) {
	if hasLiteral(b, i, "null") {
		return nil, i + 4, true
	}
	if i >= len(b) || b[i] != '[' {
		return nil, 0, false
	}
	out := []T{}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, i + 1, true
	}
	for {
		end := valueEnd(b, i)
		if end < 0 {
			return nil, 0, false
		}
		v, ok := elem(b[i:end])
		if !ok {
			return nil, 0, false
		}
		out = append(out, v)
		i = skipSpace(b, end)
		if i >= len(b) {
			return nil, 0, false
		}
		if b[i] == ']' {
			return out, i + 1, true
		}
		if b[i] != ',' {
			return nil, 0, false
		}
		i = skipSpace(b, i+1)
	}
}

// decodeResultFast decodes a result into r, which must be the zero Result, member by member:
// the transcription by decodeTranscriptionFast (the general way when that declines), every
// other known member by encoding/json from its own bytes. It spares the 2-hour result one
// validation and one skip of its megabytes by encoding/json. It declines (false, r untouched)
// a member it does not know by its exact name, a member given twice, and bytes that are not an
// object, which the caller then decodes the general way.
func decodeResultFast(b []byte, r *Result) bool {
	if !reflect.ValueOf(r).Elem().IsZero() {
		return false
	}
	var out Result
	fields := map[string]any{
		"metadata": &out.Metadata, "translation": &out.Translation, "summarization": &out.Summarization,
		"moderation": &out.Moderation, "named_entity_recognition": &out.NamedEntityRecognition,
		"name_consistency": &out.NameConsistency, "speaker_reidentification": &out.SpeakerReidentification,
		"structured_data_extraction": &out.StructuredDataExtraction, "sentiment_analysis": &out.SentimentAnalysis,
		"audio_to_llm": &out.AudioToLLM, "sentences": &out.Sentences, "display_mode": &out.DisplayMode,
		"chapterization": &out.Chapterization, "diarization": &out.Diarization, "messages": &out.Messages,
	}
	seen := map[string]bool{}
	if !decodeMembers(b, func(key []byte, i int) (int, bool) {
		name := string(key)
		if seen[name] {
			return 0, false
		}
		seen[name] = true
		end := valueEnd(b, i)
		if end < 0 {
			return 0, false
		}
		v := b[i:end]
		switch field, known := fields[name]; {
		case name == "transcription":
			if string(v) == "null" {
				return end, true
			}
			t := new(Transcription)
			if t.UnmarshalJSON(v) != nil { // the fast decoding, else the general one
				return 0, false
			}
			out.Transcription = t
		case known:
			if json.Unmarshal(v, field) != nil {
				return 0, false
			}
		default:
			return 0, false
		}
		return end, true
	}) {
		return false
	}
	*r = out
	return true
}
