package api

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/scribehook/scribehook/internal/plainjson"
)

// A 2-hour result holds 20,000 words in a few hundred utterances. Encoded through encoding/json,
// each word is a reflective json.Marshal of its own, and the bytes of every word are then
// validated and copied again by each enclosing MarshalJSON (utterance, transcription, result,
// job), since encoding/json compacts what a Marshaler returns. The transcription, its
// utterances and its words are therefore written here by hand, appending to one buffer, in
// exactly the bytes encoding/json gives for them (compact, HTML-escaped, the same float
// format); an object with members this model does not know, or a value encoding/json refuses
// (NaN, infinities), takes the general way, whose output is compacted as its parent would.

// appendTranscription appends t as Transcription.MarshalJSON encodes it.
func appendTranscription(dst []byte, t *Transcription) ([]byte, error) {
	if len(t.Extra) > 0 {
		return appendGeneral(dst, t.encodeGeneral)
	}
	dst = append(dst, `{"full_transcript":`...)
	dst = appendString(dst, t.FullTranscript)
	dst = append(dst, `,"languages":[`...)
	dst, _ = appendElements(dst, t.Languages, func(dst []byte, l *string) ([]byte, error) {
		return appendString(dst, *l), nil
	})
	dst = append(dst, `],"utterances":[`...)
	dst, err := appendElements(dst, t.Utterances, appendUtterance)
	if err != nil {
		return nil, err
	}
	dst = append(dst, ']')
	if t.Sentences != nil {
		if dst, err = appendMember(dst, "sentences", t.Sentences); err != nil {
			return nil, err
		}
	}
	if t.Subtitles != nil {
		if dst, err = appendMember(dst, "subtitles", t.Subtitles); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// appendUtterance appends u as Utterance.MarshalJSON encodes it.
func appendUtterance(dst []byte, u *Utterance) ([]byte, error) {
	if len(u.Extra) > 0 || !finite(u.Start, u.End, u.Confidence) {
		return appendGeneral(dst, u.encodeGeneral)
	}
	dst = appendTimes(append(dst, '{'), u.Start, u.End, u.Confidence)
	dst = append(dst, `,"channel":`...)
	dst = strconv.AppendInt(dst, int64(u.Channel), 10)
	dst = append(dst, `,"words":[`...)
	dst, err := appendElements(dst, u.Words, appendWord)
	if err != nil {
		return nil, err
	}
	dst = append(dst, `],"text":`...)
	dst = appendString(dst, u.Text)
	if u.Language != "" {
		dst = append(dst, `,"language":`...)
		dst = appendString(dst, u.Language)
	}
	if u.Speaker != nil {
		dst = append(dst, `,"speaker":`...)
		dst = strconv.AppendInt(dst, int64(*u.Speaker), 10)
	}
	return append(dst, '}'), nil
}

// appendWord appends w as Word.MarshalJSON encodes it.
func appendWord(dst []byte, w *Word) ([]byte, error) {
	if len(w.Extra) > 0 || !finite(w.Start, w.End, w.Confidence) {
		return appendGeneral(dst, w.encodeGeneral)
	}
	dst = append(dst, `{"word":`...)
	dst = appendString(dst, w.Word)
	dst = appendTimes(append(dst, ','), w.Start, w.End, w.Confidence)
	return append(dst, '}'), nil
}

// appendTimes appends the members words and utterances share: start, end and confidence.
func appendTimes(dst []byte, start, end, confidence float64) []byte {
	dst = append(dst, `"start":`...)
	dst = appendFloat(dst, start)
	dst = append(dst, `,"end":`...)
	dst = appendFloat(dst, end)
	dst = append(dst, `,"confidence":`...)
	return appendFloat(dst, confidence)
}

// appendElements appends the elements of s, each by elem, separated by commas (the brackets
// are the caller's).
func appendElements[T any](dst []byte, s []T, elem func([]byte, *T) ([]byte, error)) ([]byte, error) {
	var err error
	for i := range s {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = elem(dst, &s[i]); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

// appendMember appends ,"name":v with v encoded by encoding/json.
func appendMember(dst []byte, name string, v any) ([]byte, error) {
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return appendMarshal(dst, v)
}

// appendGeneral appends what encode (a type's general encoding, encodeKeeping) gives, as an
// enclosing encoding/json Marshal would copy it: compacted, with HTML characters escaped (the
// extra members are kept as they came).
func appendGeneral(dst []byte, encode func() ([]byte, error)) ([]byte, error) {
	b, err := encode()
	if err != nil {
		return nil, err
	}
	return appendCopied(dst, b)
}

// appendCopied appends the JSON b as encoding/json copies what a Marshaler returns into its
// output: compacted, with HTML characters escaped.
func appendCopied(dst, b []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, err
	}
	out := bytes.NewBuffer(dst)
	json.HTMLEscape(out, buf.Bytes())
	return out.Bytes(), nil
}

func finite(fs ...float64) bool {
	for _, f := range fs {
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return false
		}
	}
	return true
}

// appendFloat is encoding/json's float64 encoding of a finite f: the shortest decimal that
// reads back as f, in exponent form below 1e-6 and from 1e21 on, with a one-digit negative
// exponent written without its leading zero.
func appendFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as json.Marshal encodes a string (HTML characters escaped,
// invalid UTF-8 replaced), for encoders of the store's small JSON columns.
func AppendJSONString(dst []byte, s string) []byte { return appendString(dst, s) }

// appendString is encoding/json's string encoding with HTML escaping (json.Marshal): quotes,
// backslashes and control characters escaped (\b, \f, \n, \r, \t by name), <, > and & as
// \u003c, \u003e, \u0026, U+2028 and U+2029 escaped, and each byte of invalid UTF-8 as \ufffd.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// sizeHint guesses the encoded size of t from its words (about 80 bytes each), so that the
// buffer of a long transcript is not grown a dozen times.
func (t *Transcription) sizeHint() int {
	n := 256 + 2*len(t.FullTranscript)
	for i := range t.Utterances {
		n += 160 + len(t.Utterances[i].Text) + 80*len(t.Utterances[i].Words)
	}
	return n
}

// appendResult appends r as Result.MarshalJSON encodes it: the transcription by hand, every
// other member through encoding/json, the unknown members after them, sorted; with normalize
// (r inside a parent written here) those are compacted and HTML-escaped as the parent's
// encoding/json would.
func appendResult(dst []byte, r *Result, normalize bool) ([]byte, error) {
	members := []struct {
		name    string
		present bool
		v       any
	}{
		{"metadata", r.Metadata != nil, r.Metadata},
		{"transcription", r.Transcription != nil, nil},
		{"translation", r.Translation != nil, r.Translation},
		{"summarization", r.Summarization != nil, r.Summarization},
		{"moderation", r.Moderation != nil, r.Moderation},
		{"named_entity_recognition", r.NamedEntityRecognition != nil, r.NamedEntityRecognition},
		{"name_consistency", r.NameConsistency != nil, r.NameConsistency},
		{"speaker_reidentification", r.SpeakerReidentification != nil, r.SpeakerReidentification},
		{"structured_data_extraction", r.StructuredDataExtraction != nil, r.StructuredDataExtraction},
		{"sentiment_analysis", r.SentimentAnalysis != nil, r.SentimentAnalysis},
		{"audio_to_llm", r.AudioToLLM != nil, r.AudioToLLM},
		{"sentences", r.Sentences != nil, r.Sentences},
		{"display_mode", r.DisplayMode != nil, r.DisplayMode},
		{"chapterization", r.Chapterization != nil, r.Chapterization},
		{"diarization", r.Diarization != nil, r.Diarization},
		{"messages", r.Messages != nil, r.Messages},
	}
	start := len(dst)
	dst = append(dst, '{')
	var err error
	for _, m := range members {
		if !m.present {
			continue
		}
		if len(dst) > start+1 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, m.name...)
		dst = append(dst, '"', ':')
		if m.v == nil {
			dst, err = appendTranscription(dst, r.Transcription)
		} else {
			dst, err = appendMarshal(dst, m.v)
		}
		if err != nil {
			return nil, err
		}
	}
	dst = append(dst, '}')
	type plain Result
	return appendExtras(dst, start, r.Extra, fieldNames(reflect.TypeFor[plain]()), normalize)
}

// appendJob appends j as Job.MarshalJSON encodes it: what encoding/json gives for its fields
// (the result by hand), then its unknown members sorted, as they came (the caller's
// encoder compacts them).
func appendJob(dst []byte, j *Job) ([]byte, error) {
	start := len(dst)
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, j.ID)
	dst = append(dst, `,"request_id":`...)
	dst = appendString(dst, j.RequestID)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, int64(j.Version), 10)
	dst = append(dst, `,"status":`...)
	dst = appendString(dst, string(j.Status))
	dst = append(dst, `,"created_at":`...)
	var err error
	if dst, err = appendMarshal(dst, j.CreatedAt); err != nil {
		return nil, err
	}
	if len(j.PostSessionMetadata) > 0 {
		if dst, err = appendMember(dst, "post_session_metadata", j.PostSessionMetadata); err != nil {
			return nil, err
		}
	}
	dst = append(dst, `,"kind":`...)
	dst = appendString(dst, string(j.Kind))
	if j.CompletedAt != nil {
		if dst, err = appendMember(dst, "completed_at", j.CompletedAt); err != nil {
			return nil, err
		}
	}
	if len(j.CustomMetadata) > 0 {
		if dst, err = appendMember(dst, "custom_metadata", j.CustomMetadata); err != nil {
			return nil, err
		}
	}
	if j.ErrorCode != nil {
		dst = append(dst, `,"error_code":`...)
		dst = strconv.AppendInt(dst, int64(*j.ErrorCode), 10)
	}
	if dst, err = appendMember(dst, "file", j.File); err != nil {
		return nil, err
	}
	params := j.RequestParams
	if len(params) == 0 {
		params = json.RawMessage("null")
	}
	if dst, err = appendMember(dst, "request_params", params); err != nil {
		return nil, err
	}
	if j.Result != nil {
		dst = append(dst, `,"result":`...)
		if dst, err = appendResult(dst, j.Result, true); err != nil {
			return nil, err
		}
	}
	dst = append(dst, '}')
	type plain Job
	return appendExtras(dst, start, j.Extra, fieldNames(reflect.TypeFor[plain]()), false)
}

// appendMarshal appends v encoded by encoding/json.
func appendMarshal(dst []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// appendExtras adds to the object dst[start:] (which ends with '}') the members of extra that
// known does not claim, sorted by name, a value missing as null: encodeKeeping's order. With
// normalize, each value is compacted with HTML characters escaped, as a parent encoder would;
// without, it goes as it came.
func appendExtras(dst []byte, start int, extra Extra, known map[string]struct{}, normalize bool) ([]byte, error) {
	if len(extra) == 0 {
		return dst, nil
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if !isKnown(known, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return dst, nil
	}
	sort.Strings(keys)
	dst = dst[:len(dst)-1]
	for _, k := range keys {
		if len(dst) > start+1 {
			dst = append(dst, ',')
		}
		kb, _ := json.Marshal(k)
		dst = append(dst, kb...)
		dst = append(dst, ':')
		raw := extra[k]
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
		if !normalize {
			dst = append(dst, raw...)
			continue
		}
		var err error
		if dst, err = appendCopied(dst, raw); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// sizeHint guesses the encoded size of r from its transcription.
func (r *Result) sizeHint() int {
	if r.Transcription == nil {
		return 1024
	}
	return 1024 + r.Transcription.sizeHint()
}

// EncodeJob is json.Marshal(j), or, without escapeHTML, what an Encoder with SetEscapeHTML(false)
// writes (less its newline), without the pass encoding/json makes over what Job.MarshalJSON
// returns (validating and copying a 2-hour record once more): for a record without unknown
// members at its top level that output is compact and escaped already, so it is the same
// bytes either way. A record with unknown members goes through encoding/json.
func EncodeJob(j *Job, escapeHTML bool) ([]byte, error) {
	if len(j.Extra) == 0 {
		return j.MarshalJSON()
	}
	if escapeHTML {
		return json.Marshal(j)
	}
	return plainjson.Marshal(j)
}

// EncodeEvent is json.Marshal(*ev), or, without escapeHTML, plainjson.Marshal(*ev) (the bytes a
// sink sends: a transcript's "<" stays "<"). The encoder grows its buffer by doubling while it
// compacts the event's data, then copies the result out: for a 2-hour result about three times
// the data. Here the event without its data is encoded (data is its last member,
// "data":null) and the data compacted once into a buffer of the final size, then, with
// escapeHTML, escaped as json.Marshal escapes it (<, >, &, U+2028, U+2029) when it holds such
// a character. Empty and invalid data take the encoder itself.
func EncodeEvent(ev *Event, escapeHTML bool) ([]byte, error) {
	const tail = `null}`
	marshal := plainjson.Marshal
	if escapeHTML {
		marshal = json.Marshal
	}
	if len(ev.Data) == 0 {
		return marshal(*ev)
	}
	head := *ev
	head.Data = nil
	h, err := marshal(head)
	if err != nil || !bytes.HasSuffix(h, []byte(`"data":`+tail)) {
		return marshal(*ev)
	}
	h = h[:len(h)-len(tail)]
	buf := bytes.NewBuffer(make([]byte, 0, len(h)+len(ev.Data)+1))
	buf.Write(h)
	if err := json.Compact(buf, ev.Data); err != nil {
		return marshal(*ev)
	}
	if data := buf.Bytes()[len(h):]; escapeHTML && bytes.ContainsAny(data, "<>&\u2028\u2029") {
		// Each escaped character takes \u00XX (6 bytes) for 1, or \u20XX for 3.
		grow := 5*(bytes.Count(data, []byte("<"))+bytes.Count(data, []byte(">"))+bytes.Count(data, []byte("&"))) +
			3*(bytes.Count(data, []byte("\u2028"))+bytes.Count(data, []byte("\u2029")))
		esc := bytes.NewBuffer(make([]byte, 0, len(h)+len(data)+grow+1))
		esc.Write(h)
		json.HTMLEscape(esc, data)
		buf = esc
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
