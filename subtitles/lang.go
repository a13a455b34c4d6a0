package subtitles

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// wordClass says how a word behaves at a line or cue break.
type wordClass uint8

const (
	// badAfter: breaking right after this word separates it from what it introduces
	// (article+noun, preposition+phrase, conjunction+clause, subject pronoun+verb, title+name).
	badAfter wordClass = 1 << iota
	// goodBefore: breaking right before this word is a preferred break point
	// (before a conjunction or a preposition).
	goodBefore
)

// Word lists per language (ISO 639-1), after lowercasing and trimming punctuation. Small on
// purpose: they decide break costs and Check's bad-break rate, not grammar.
const (
	art  = badAfter
	prep = badAfter | goodBefore
	conj = badAfter | goodBefore
	pron = badAfter
)

var breakWords = map[string]map[string]wordClass{
	"en": {
		"a": art, "an": art, "the": art, "this": art, "these": art, "those": art,
		"my": art, "your": art, "his": art, "her": art, "its": art, "our": art, "their": art,
		"mr": art, "mrs": art, "ms": art, "dr": art, "st": art,
		"of": prep, "to": prep, "in": prep, "on": prep, "at": prep, "by": prep, "for": prep,
		"with": prep, "from": prep, "into": prep, "onto": prep, "about": prep, "over": prep,
		"under": prep, "after": prep, "before": prep, "between": prep, "through": prep,
		"during": prep, "without": prep, "within": prep, "upon": prep, "among": prep,
		"across": prep, "against": prep, "toward": prep, "towards": prep, "via": prep, "per": prep,
		"and": conj, "or": conj, "but": conj, "nor": conj, "yet": conj, "because": conj,
		"if": conj, "than": conj, "when": conj, "while": conj, "although": conj,
		"though": conj, "unless": conj, "since": conj, "whether": conj, "where": conj,
		"that": conj, "which": conj, "who": conj,
		"i": pron, "you": pron, "he": pron, "she": pron, "it": pron, "we": pron, "they": pron,
		"i'm": pron, "you're": pron, "we're": pron, "they're": pron, "i'll": pron, "i've": pron,
	},
	"fr": {
		"le": art, "la": art, "les": art, "un": art, "une": art, "des": art, "du": art, "l'": art,
		"ce": art, "cet": art, "cette": art, "ces": art, "mon": art, "ma": art, "mes": art,
		"ton": art, "ta": art, "tes": art, "son": art, "sa": art, "ses": art, "notre": art,
		"votre": art, "leur": art, "leurs": art, "m": art, "mme": art,
		"de": prep, "d'": prep, "à": prep, "au": prep, "aux": prep, "en": prep, "dans": prep,
		"sur": prep, "sous": prep, "par": prep, "pour": prep, "avec": prep, "sans": prep,
		"chez": prep, "vers": prep, "entre": prep, "contre": prep, "depuis": prep,
		"et": conj, "ou": conj, "mais": conj, "donc": conj, "ni": conj, "car": conj,
		"que": conj, "qui": conj, "si": conj, "quand": conj, "parce": conj, "lorsque": conj,
		"je": pron, "j'": pron, "tu": pron, "il": pron, "elle": pron, "on": pron, "nous": pron,
		"vous": pron, "ils": pron, "elles": pron,
	},
	"es": {
		"el": art, "la": art, "los": art, "las": art, "un": art, "una": art, "unos": art,
		"unas": art, "mi": art, "mis": art, "tu": art, "tus": art, "su": art, "sus": art,
		"este": art, "esta": art, "estos": art, "estas": art,
		"de": prep, "del": prep, "a": prep, "al": prep, "en": prep, "con": prep, "por": prep,
		"para": prep, "sin": prep, "sobre": prep, "entre": prep, "hasta": prep, "desde": prep,
		"hacia": prep, "contra": prep,
		"y": conj, "e": conj, "o": conj, "u": conj, "pero": conj, "que": conj, "si": conj,
		"porque": conj, "cuando": conj, "aunque": conj, "como": conj,
		"yo": pron, "tú": pron, "él": pron, "ella": pron, "nosotros": pron, "vosotros": pron,
		"ellos": pron, "ellas": pron, "usted": pron, "ustedes": pron,
	},
	"de": {
		"der": art, "die": art, "das": art, "den": art, "dem": art, "des": art, "ein": art,
		"eine": art, "einen": art, "einem": art, "einer": art, "eines": art, "mein": art,
		"meine": art, "dein": art, "sein": art, "seine": art, "ihre": art, "unser": art,
		"von": prep, "zu": prep, "zum": prep, "zur": prep, "mit": prep, "in": prep, "im": prep,
		"an": prep, "am": prep, "auf": prep, "aus": prep, "bei": prep, "beim": prep,
		"nach": prep, "für": prep, "über": prep, "unter": prep, "vor": prep, "durch": prep,
		"gegen": prep, "ohne": prep, "um": prep,
		"und": conj, "oder": conj, "aber": conj, "denn": conj, "dass": conj, "weil": conj,
		"wenn": conj, "ob": conj, "als": conj, "sondern": conj,
		"ich": pron, "du": pron, "er": pron, "sie": pron, "es": pron, "wir": pron, "ihr": pron,
	},
	"it": {
		"il": art, "lo": art, "la": art, "i": art, "gli": art, "le": art, "un": art, "uno": art,
		"una": art, "l'": art, "un'": art, "mio": art, "mia": art, "suo": art, "sua": art,
		"di": prep, "del": prep, "della": prep, "a": prep, "al": prep, "alla": prep, "da": prep,
		"in": prep, "nel": prep, "nella": prep, "con": prep, "su": prep, "per": prep, "tra": prep,
		"fra": prep,
		"e":   conj, "o": conj, "ma": conj, "che": conj, "se": conj, "perché": conj,
		"quando": conj, "mentre": conj,
		"io": pron, "tu": pron, "lui": pron, "lei": pron, "noi": pron, "voi": pron, "loro": pron,
	},
	"pt": {
		"o": art, "a": art, "os": art, "as": art, "um": art, "uma": art, "uns": art, "umas": art,
		"meu": art, "minha": art, "seu": art, "sua": art,
		"de": prep, "do": prep, "da": prep, "dos": prep, "das": prep, "em": prep, "no": prep,
		"na": prep, "nos": prep, "nas": prep, "por": prep, "para": prep, "com": prep, "sem": prep,
		"sobre": prep, "entre": prep, "até": prep, "desde": prep,
		"e": conj, "ou": conj, "mas": conj, "que": conj, "se": conj, "porque": conj,
		"quando": conj, "como": conj,
		"eu": pron, "tu": pron, "ele": pron, "ela": pron, "nós": pron, "vós": pron,
		"eles": pron, "elas": pron, "você": pron, "vocês": pron,
	},
}

// wordListFor returns the break-word list of a language tag ("en", "en-US", "EN"); English
// when the tag is empty (most ASR output), nil when the language has no list.
func wordListFor(lang string) map[string]wordClass {
	if lang == "" {
		return breakWords["en"]
	}
	base, _, _ := strings.Cut(lang, "-")
	base, _, _ = strings.Cut(base, "_")
	return breakWords[strings.ToLower(base)]
}

// classify returns the break class of a word in a list. A word carrying its own trailing
// punctuation ("and,") is never bad to break after.
func classify(list map[string]wordClass, w string) wordClass {
	if list == nil || w == "" || endPunct(w) != punctNone {
		return 0
	}
	key := strings.TrimFunc(w, isQuoteOrBracket)
	if key == "" {
		return 0
	}
	if c, ok := list[key]; ok {
		return c
	}
	lower := strings.ToLower(key)
	if lower == key {
		return 0
	}
	return list[lower]
}

// punct is the strength of the punctuation a word ends with.
type punct uint8

const (
	punctNone     punct = iota
	punctClause         // , ; : — and their CJK forms
	punctSentence       // . ? ! … and their CJK forms
)

// endPunct classifies the last rune of w, looking through closing quotes and brackets. An
// abbreviation such as "Mr." or "e.g." is not a sentence end.
func endPunct(w string) punct {
	t := strings.TrimRightFunc(w, isQuoteOrBracket)
	r, _ := utf8.DecodeLastRuneInString(t)
	switch r {
	case '.':
		if isAbbreviation(t) {
			return punctNone
		}
		return punctSentence
	case '?', '!', '…', '。', '？', '！', '؟', '।':
		return punctSentence
	case ',', ';', ':', '—', '–', '、', '，', '；', '：', '،':
		return punctClause
	}
	return punctNone
}

// isAbbreviation reports a word that ends with a full stop without ending a sentence.
func isAbbreviation(t string) bool {
	switch strings.ToLower(t) {
	case "mr.", "mrs.", "ms.", "dr.", "st.", "prof.", "e.g.", "i.e.", "etc.", "vs.", "no.", "m.", "mme.":
		return true
	}
	// Initials such as "J." or "U.S.".
	letters := 0
	for _, r := range t {
		if r != '.' {
			letters++
		}
	}
	return letters <= 1 && utf8.RuneCountInString(t) == 2
}

func isQuoteOrBracket(r rune) bool {
	switch r {
	case '"', '\'', ')', ']', '}', '»', '«', '“', '”', '‘', '’', '(', '[', '{', '」', '』', '）', '「', '『', '（':
		return true
	}
	return false
}

// isCJK reports scripts written without spaces between words, where a line may break
// between any two words and words are joined without a space.
func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Thai, r) ||
		(r >= 0x3000 && r <= 0x303F) || // CJK punctuation
		(r >= 0xFF00 && r <= 0xFF60) || // full-width forms
		r == 'ー'
}

// joinsTight reports whether words a and b are written without a space between them.
func joinsTight(a, b string) bool {
	ra, _ := utf8.DecodeLastRuneInString(a)
	rb, _ := utf8.DecodeRuneInString(b)
	return isCJK(ra) && isCJK(rb)
}
