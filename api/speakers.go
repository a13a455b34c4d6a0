package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SpeakersMetadataKey is the custom_metadata member that names a job's speakers at submit time,
// in the shape of PUT /v1/jobs/{id}/speakers: {"scribehook_speakers": {"0": "Alice Martin"}}.
// The kit reads it when the job's result (or a live session's end) is applied; names stored
// later through the route override it speaker by speaker.
const SpeakersMetadataKey = "scribehook_speakers"

// Bounds of speaker names.
const (
	// MaxSpeaker is the highest speaker number a name may be given for: diarization numbers
	// speakers from 0, and no recording has a hundred of them.
	MaxSpeaker = 99
	// MaxSpeakerNameRunes bounds a name: it becomes a subtitle label, which must leave room on
	// its line for the words.
	MaxSpeakerNameRunes = 64
	// MaxSpeakersBody bounds the JSON text of a set of names.
	MaxSpeakersBody = 16 << 10
)

// SpeakerNames maps diarization's speaker numbers (api.Utterance.Speaker: 0, 1, …) to the
// names to show for them. Its JSON is an object whose keys are the numbers in decimal:
// {"0": "Alice Martin", "1": "Bob Stone"}.
type SpeakerNames map[int]string

// ParseSpeakerNames reads and validates a set of names from its JSON text (a request body:
// outside input). Names are trimmed of surrounding space. Errors name the field and the rule,
// never the value, and list every violation (ValidationErrors).
func ParseSpeakerNames(b []byte) (SpeakerNames, error) {
	if len(b) > MaxSpeakersBody {
		return nil, ValidationErrors{{Field: "body", Message: fmt.Sprintf("must be at most %d bytes", MaxSpeakersBody)}}
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil || dec.More() || raw == nil {
		// Not the decoder's message: it quotes the body.
		return nil, ValidationErrors{{Field: "body", Message: `must be one JSON object of speaker numbers to names, e.g. {"0": "Alice Martin"}`}}
	}
	out := make(SpeakerNames, len(raw))
	var errs ValidationErrors
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		n, err := speakerKey(key)
		if err != nil {
			errs = append(errs, FieldError{Field: "speaker " + strconv.Quote(safeKey(key)), Message: err.Error()})
			continue
		}
		var name string
		if err := json.Unmarshal(raw[key], &name); err != nil {
			errs = append(errs, FieldError{Field: fieldOf(n), Message: "must be a string"})
			continue
		}
		if _, dup := out[n]; dup {
			errs = append(errs, FieldError{Field: fieldOf(n), Message: "is given twice"})
			continue
		}
		out[n] = strings.TrimSpace(name)
	}
	errs = append(errs, out.check()...)
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// Validate checks every name: speaker numbers from 0 to MaxSpeaker, names not empty once
// trimmed, at most MaxSpeakerNameRunes, valid UTF-8 without control characters.
func (n SpeakerNames) Validate() error {
	if errs := n.check(); len(errs) > 0 {
		return errs
	}
	return nil
}

func (n SpeakerNames) check() ValidationErrors {
	var errs ValidationErrors
	for _, k := range slices.Sorted(maps.Keys(n)) {
		if k < 0 || k > MaxSpeaker {
			errs = append(errs, FieldError{Field: fieldOf(k), Message: fmt.Sprintf("speaker number must be between 0 and %d", MaxSpeaker)})
			continue
		}
		if msg := nameRule(n[k]); msg != "" {
			errs = append(errs, FieldError{Field: fieldOf(k), Message: msg})
		}
	}
	return errs
}

// nameRule is the rule name breaks, "" when none.
func nameRule(name string) string {
	switch {
	case !utf8.ValidString(name):
		return "must be valid UTF-8"
	case strings.TrimSpace(name) != name:
		return "must not start or end with space"
	case name == "":
		return "must not be empty"
	case utf8.RuneCountInString(name) > MaxSpeakerNameRunes:
		return fmt.Sprintf("must be at most %d characters", MaxSpeakerNameRunes)
	case strings.IndexFunc(name, badNameRune) >= 0:
		return "must not contain control or formatting characters (line breaks, tabs, bidirectional marks)"
	}
	return ""
}

// badNameRune refuses what would break a subtitle line or mislead a reader: control
// characters, line and paragraph separators, and formatting characters such as bidirectional
// overrides.
func badNameRune(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// speakerKey reads a JSON key as a speaker number: decimal digits only, no sign, no leading
// zero.
func speakerKey(key string) (int, error) {
	if key == "" || len(key) > 2 || (len(key) > 1 && key[0] == '0') || strings.Trim(key, "0123456789") != "" {
		return 0, fmt.Errorf("must be a speaker number from 0 to %d, written in decimal", MaxSpeaker)
	}
	n, err := strconv.Atoi(key)
	if err != nil {
		return 0, fmt.Errorf("must be a speaker number from 0 to %d, written in decimal", MaxSpeaker)
	}
	return n, nil
}

// safeKey is a key as an error may quote it: short, printable.
func safeKey(key string) string {
	key = strings.Map(func(r rune) rune {
		if badNameRune(r) || r == utf8.RuneError {
			return '?'
		}
		return r
	}, key)
	if utf8.RuneCountInString(key) > 8 {
		key = string([]rune(key)[:8]) + "…"
	}
	return key
}

func fieldOf(n int) string { return "speaker " + strconv.Quote(strconv.Itoa(n)) }

// MarshalJSON writes the names with their numbers as keys, in number order.
func (n SpeakerNames) MarshalJSON() ([]byte, error) {
	if n == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(map[int]string(n))
}

// Equal reports whether n and o name the same speakers the same.
func (n SpeakerNames) Equal(o SpeakerNames) bool { return maps.Equal(n, o) }

// Merge is n with over's names on top (over wins speaker by speaker); nil when both are empty.
func (n SpeakerNames) Merge(over SpeakerNames) SpeakerNames {
	if len(n) == 0 && len(over) == 0 {
		return nil
	}
	out := make(SpeakerNames, len(n)+len(over))
	maps.Copy(out, n)
	maps.Copy(out, over)
	return out
}

// SpeakerNamesFromMetadata reads SpeakersMetadataKey of a job's custom_metadata. Metadata
// without the key gives nil; a key whose value is not a valid set of names gives an error (the
// job is still applied: the caller logs it and renders without those names).
func SpeakerNamesFromMetadata(md json.RawMessage) (SpeakerNames, error) {
	if len(md) == 0 || !bytes.Contains(md, []byte(SpeakersMetadataKey)) {
		return nil, nil
	}
	var v map[string]json.RawMessage
	if json.Unmarshal(md, &v) != nil {
		return nil, nil // not an object: no key
	}
	raw, ok := v[SpeakersMetadataKey]
	if !ok {
		return nil, nil
	}
	names, err := ParseSpeakerNames(raw)
	if err != nil {
		return nil, fmt.Errorf("custom_metadata.%s: %w", SpeakersMetadataKey, err)
	}
	return names, nil
}
