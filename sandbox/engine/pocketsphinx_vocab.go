//go:build pocketsphinx

package engine

import (
	"slices"
	"strings"
)

// addVocabulary adds the custom vocabulary words missing from the decoder's dictionary and
// returns the spelling to report for each (the dictionary is lower case: "scribehook" is
// reported as the vocabulary's "Scribehook"). Notes go to Logf when note is set: a stream
// adds the words to each channel's decoder but notes them once.
func (p *Pocketsphinx) addVocabulary(d *psDecoder, entries []string, note bool) map[string]string {
	logf := func(format string, args ...any) {
		if note {
			p.logf(format, args...)
		}
	}
	spell := map[string]string{}
	type entry struct{ word, phones string }
	var adds []entry
	for _, w := range vocabulary(entries) {
		w = strings.Trim(w, `.,;:!?"()[]{}`)
		lower := strings.ToLower(w)
		if lower == "" {
			continue
		}
		if lower != w {
			spell[lower] = w
		}
		if _, ok := d.lookup(lower); ok || slices.ContainsFunc(adds, func(e entry) bool { return e.word == lower }) {
			continue
		}
		phones := p.pronounce(d, lower)
		if phones == "" {
			logf("pocketsphinx: custom vocabulary word %q skipped: no pronunciation can be made for it (letters a–z and apostrophes only)", w)
			continue
		}
		logf("pocketsphinx: custom vocabulary word %q added as /%s/", w, phones)
		adds = append(adds, entry{lower, phones})
	}
	for i, a := range adds {
		// Rebuilding the search is slow: once, with the last word.
		if err := d.addWord(a.word, a.phones, i == len(adds)-1); err != nil {
			logf("%v", err)
		}
	}
	return spell
}

// pronounce makes a pronunciation for a word missing from the dictionary: two dictionary
// words joined ("scribehook" = "scribe" + "hook"), else crude letter-to-sound rules.
func (p *Pocketsphinx) pronounce(d *psDecoder, w string) string {
	for _, r := range w {
		if (r < 'a' || r > 'z') && r != '\'' {
			return ""
		}
	}
	for i := len(w) - 2; i >= 2; i-- {
		a, okA := d.lookup(w[:i])
		if !okA {
			continue
		}
		if b, okB := d.lookup(w[i:]); okB {
			return a + " " + b
		}
	}
	return letterToPhones(w)
}

// letterToPhones spells a lower-case word with the model's phones by greedy rules on letter
// groups. It is crude (English spelling is not phonetic) but gives the decoder a chance at
// names and coined words; words the decoder already knows never get here.
func letterToPhones(w string) string {
	w = strings.ReplaceAll(w, "'", "")
	rules := []struct{ g, ph string }{
		{"tch", "CH"}, {"igh", "AY"}, {"sch", "S K"}, {"tion", "SH AH N"}, {"sion", "ZH AH N"},
		{"ch", "CH"}, {"sh", "SH"}, {"th", "TH"}, {"ph", "F"}, {"wh", "W"}, {"ck", "K"},
		{"ng", "NG"}, {"qu", "K W"}, {"gh", ""}, {"ee", "IY"}, {"ea", "IY"}, {"oo", "UW"},
		{"ou", "AW"}, {"ow", "OW"}, {"oi", "OY"}, {"oy", "OY"}, {"ai", "EY"}, {"ay", "EY"},
		{"au", "AO"}, {"aw", "AO"}, {"ie", "IY"}, {"ei", "EY"}, {"ey", "IY"}, {"er", "ER"},
		{"ir", "ER"}, {"ur", "ER"}, {"ar", "AA R"}, {"or", "AO R"}, {"x", "K S"},
	}
	single := map[byte]string{
		'a': "AE", 'b': "B", 'c': "K", 'd': "D", 'e': "EH", 'f': "F", 'g': "G", 'h': "HH",
		'i': "IH", 'j': "JH", 'k': "K", 'l': "L", 'm': "M", 'n': "N", 'o': "AA", 'p': "P",
		'q': "K", 'r': "R", 's': "S", 't': "T", 'u': "AH", 'v': "V", 'w': "W", 'y': "IH", 'z': "Z",
	}
	vowel := func(c byte) bool { return strings.IndexByte("aeiouy", c) >= 0 }
	var out []string
	emit := func(ph string) {
		if ph != "" {
			out = append(out, ph)
		}
	}
	for i := 0; i < len(w); {
		rest := w[i:]
		switch {
		case i == 0 && (strings.HasPrefix(rest, "kn") || strings.HasPrefix(rest, "wr")):
			emit(single[rest[1]])
			i += 2
			continue
		case len(rest) >= 2 && rest[0] == rest[1] && !vowel(rest[0]):
			emit(single[rest[0]]) // doubled consonants are one sound
			i += 2
			continue
		}
		matched := false
		for _, r := range rules {
			if strings.HasPrefix(rest, r.g) {
				emit(r.ph)
				i += len(r.g)
				matched = true
				break
			}
		}
		if matched {
			continue
		}
		c := w[i]
		next := byte(0)
		if i+1 < len(w) {
			next = w[i+1]
		}
		switch {
		case c == 'c' && (next == 'e' || next == 'i' || next == 'y'):
			emit("S")
		case c == 'e' && i == len(w)-1 && len(out) > 1:
			// a final e is silent ("scribe")
		case c == 'y' && i == 0:
			emit("Y")
		case c == 'y' && i == len(w)-1:
			emit("IY")
		default:
			emit(single[c])
		}
		i++
	}
	return strings.Join(out, " ")
}
