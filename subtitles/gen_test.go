package subtitles

import (
	"math"
	"math/rand/v2"
	"strings"

	"github.com/scribehook/scribehook/api"
)

// Test input generators: realistic English-like speech (for golden comparisons, the greedy
// baseline and benchmarks) and hostile word streams (for properties and fuzzing).

var (
	genFunction = strings.Fields("the a an of to in on at for with from and or but because if that " +
		"I you he she we they it my your their this is was are be have has will can would should not")
	genContent = strings.Fields("people system message callback subtitle window morning question " +
		"answer problem service network language machine picture example moment country program " +
		"government company number teacher morning evening weather kitchen garden station airport " +
		"delivered received important different beautiful difficult interesting available " +
		"quickly really finally probably usually always never sometimes together tomorrow " +
		"understand remember consider continue develop explain forward describe imagine " +
		"international infrastructure responsibility communication administration " +
		"go get make know think take see come want look use find give tell work call try ask")
)

// genSpeech returns about n words of speech: sentences of 3–22 words with commas, question
// and exclamation marks, natural word lengths and pauses, speaker turns of 1–4 sentences
// among speakers (0 = no diarization), one utterance per turn split at pauses ≥ 0.8 s.
func genSpeech(rng *rand.Rand, n, speakers int) []api.Utterance {
	var utts []api.Utterance
	t := 0.3 + rng.Float64()
	spk := 0
	var cur *api.Utterance
	flush := func() {
		if cur != nil && len(cur.Words) > 0 {
			cur.Start, cur.End = cur.Words[0].Start, cur.Words[len(cur.Words)-1].End
			texts := make([]string, len(cur.Words))
			for i, w := range cur.Words {
				texts[i] = w.Word
			}
			cur.Text = strings.Join(texts, " ")
			utts = append(utts, *cur)
		}
		cur = nil
	}
	words := 0
	for words < n {
		if speakers > 1 && rng.IntN(3) == 0 {
			flush()
			spk = (spk + 1 + rng.IntN(speakers-1)) % speakers
			t += 0.15 + rng.ExpFloat64()*0.6
		}
		sentences := 1 + rng.IntN(4)
		for s := 0; s < sentences && words < n; s++ {
			length := 3 + rng.IntN(20)
			if rng.IntN(6) == 0 {
				length = 1 + rng.IntN(3) // "Yes." "Right, okay."
			}
			for k := 0; k < length && words < n; k++ {
				var w string
				if rng.IntN(100) < 42 {
					w = genFunction[rng.IntN(len(genFunction))]
				} else {
					w = genContent[rng.IntN(len(genContent))]
				}
				if k == 0 {
					w = strings.ToUpper(w[:1]) + w[1:]
				}
				pause := 0.02 + rng.Float64()*0.1
				switch {
				case k == length-1:
					w += [...]string{".", ".", ".", "?", "!"}[rng.IntN(5)]
					pause = 0.2 + rng.ExpFloat64()*0.5
					if rng.IntN(25) == 0 {
						pause += 2 + rng.Float64()*3
					}
				case k > 2 && k < length-2 && rng.IntN(8) == 0:
					w += ","
					pause = 0.1 + rng.Float64()*0.3
				}
				d := 0.06 + 0.055*float64(len(w))*(0.7+0.6*rng.Float64())
				if cur == nil || pause >= 0.8 {
					flush()
					cur = &api.Utterance{Channel: 0, Confidence: 0.9, Language: "en"}
					if speakers > 0 {
						cur.Speaker = ptr(spk)
					}
				}
				cur.Words = append(cur.Words, api.Word{Word: w, Start: round3(t), End: round3(t + d), Confidence: 0.9})
				words++
				t += d + pause
			}
		}
	}
	flush()
	return utts
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// withLongWords replaces about one word in every with a URL of 43–80 runes, longer than a
// line of every preset, keeping the word's times and trailing punctuation: read out quickly
// between close words, as on the held-back transcript whose URL cue lasted 0.135 s.
func withLongWords(rng *rand.Rand, utts []api.Utterance, every int) []api.Utterance {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	for u := range utts {
		words := utts[u].Words
		for k := range words {
			if rng.IntN(every) != 0 {
				continue
			}
			var sb strings.Builder
			sb.WriteString("https://docs.example.com/")
			for n := 18 + rng.IntN(38); n > 0; n-- {
				if rng.IntN(8) == 0 {
					sb.WriteByte('/')
				} else {
					sb.WriteByte(letters[rng.IntN(len(letters))])
				}
			}
			w := strings.TrimRight(words[k].Word, ".,?!")
			sb.WriteString(words[k].Word[len(w):])
			words[k].Word = sb.String()
		}
		texts := make([]string, len(words))
		for k, w := range words {
			texts[k] = w.Word
		}
		if len(words) > 0 {
			utts[u].Text = strings.Join(texts, " ")
		}
	}
	return utts
}

// hostileWords is the vocabulary of the property tests: ordinary words, markup and
// separators that break files, emoji and CJK, and a word longer than any line.
var hostileWords = []string{"the", "a", "and", "of", "hello", "world", "callback", "Yes.", "No?",
	"okay,", "AT&T", "<inaudible>", "a-->b", "-->", "->x", "<3", "&amp;", "R&D", "x>y", "😀", "👩‍💻",
	"你好", "世界。", "日本語", "café", "naïve", "Zoë", "\u0301e", " spaced ", "tab\tword", "new\nline",
	"\u00a0nbsp", "\ufeffbom", "\x00nul", "", "   ", "\xff\xfebad",
	"supercalifragilisticexpialidociousandthensomemoremoremore", "a", "to", "I", "the", "in"}

// genHostile returns random utterances exercising every input hazard: missing, NaN,
// negative, zero-length, overlapping and out-of-order times, overlapping utterances, text-
// only utterances, speakers and channels, languages.
func genHostile(rng *rand.Rand, maxWords int) []api.Utterance {
	nu := 1 + rng.IntN(6)
	utts := make([]api.Utterance, nu)
	t := rng.Float64() * 3
	for u := range utts {
		ut := &utts[u]
		ut.Channel = rng.IntN(2)
		if rng.IntN(3) > 0 {
			ut.Speaker = ptr(rng.IntN(3))
		}
		if rng.IntN(8) == 0 {
			ut.Language = [...]string{"en", "fr", "zh"}[rng.IntN(3)]
		}
		if rng.IntN(4) == 0 {
			t -= rng.Float64() * 4 // overlap the previous utterance
		}
		t = max(t, 0)
		ut.Start = round3(t)
		nw := rng.IntN(maxWords/nu + 2)
		if rng.IntN(10) == 0 {
			// Text only, as translations arrive.
			var ws []string
			for range nw {
				ws = append(ws, hostileWords[rng.IntN(len(hostileWords))])
			}
			ut.Text = strings.Join(ws, " ")
			t += float64(nw) * 0.3 * rng.Float64()
			ut.End = round3(t)
			if rng.IntN(4) == 0 {
				ut.Start, ut.End = 0, 0
			}
			continue
		}
		for range nw {
			w := api.Word{Word: hostileWords[rng.IntN(len(hostileWords))]}
			d := rng.Float64() * 0.6
			switch rng.IntN(20) {
			case 0:
				w.Start, w.End = math.NaN(), math.NaN()
			case 1:
				w.Start, w.End = 0, 0
			case 2:
				w.Start, w.End = t, t // zero length
			case 3:
				w.Start, w.End = t+d, t // end before start
			case 4:
				w.Start, w.End = t-rng.Float64(), t+d // starts before the previous word
			case 5:
				w.Start, w.End = -1, 5e9
			default:
				w.Start, w.End = round3(t), round3(t+d)
			}
			if rng.IntN(50) == 0 {
				t += 2 + rng.Float64()*4 // long pause
			}
			t += d * (0.5 + rng.Float64())
			if rng.IntN(30) == 0 {
				t += 0.001 // words packed closer than a frame
			}
			ut.Words = append(ut.Words, w)
		}
		ut.End = round3(t)
	}
	return utts
}
