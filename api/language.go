package api

import "slices"

// languageCodes are the ISO 639 codes of §2.2 of the interface, sorted so that IsLanguage can
// search them. The list is closed: the service rejects any other code, so scribehook does too
// rather than letting a job fail after it was accepted.
var languageCodes = [...]string{
	"af", "am", "ar", "as", "az", "ba", "be", "bg", "bn", "bo", "br", "bs", "ca", "cs", "cy",
	"da", "de", "el", "en", "es", "et", "eu", "fa", "fi", "fo", "fr", "gl", "gu", "ha", "haw",
	"he", "hi", "hr", "ht", "hu", "hy", "id", "is", "it", "ja", "jw", "ka", "kk", "km", "kn",
	"ko", "la", "lb", "ln", "lo", "lt", "lv", "mg", "mi", "mk", "ml", "mn", "mr", "ms", "mt",
	"my", "ne", "nl", "nn", "no", "oc", "pa", "pl", "ps", "pt", "ro", "ru", "sa", "sd", "si",
	"sk", "sl", "sn", "so", "sq", "sr", "su", "sv", "sw", "ta", "te", "tg", "th", "tk", "tl",
	"tr", "tt", "uk", "ur", "uz", "vi", "yi", "yo", "zh",
}

// IsLanguage reports whether code is one of the language codes of §2.2. Codes are lower case;
// "EN" is not a code.
func IsLanguage(code string) bool {
	_, ok := slices.BinarySearch(languageCodes[:], code)
	return ok
}

// LanguageCodes returns the language codes of §2.2 in alphabetical order, as a fresh slice.
func LanguageCodes() []string {
	return slices.Clone(languageCodes[:])
}
