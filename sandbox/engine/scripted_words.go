package engine

import (
	"encoding/binary"
	"hash/fnv"
	"math"
)

// wordGen lays words out from the start of an utterance, one after another, drawing them from
// a generator seeded by the channel and the start: the words of a partial are always the first
// words of the final.
type wordGen struct {
	rng          uint64
	words, vocab []string
	laid         []Word
	next         float64 // start of the next word, unrounded
}

func newWordGen(words, vocab []string, channel int, start float64) *wordGen {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:], uint64(channel))
	binary.LittleEndian.PutUint64(b[8:], math.Float64bits(start))
	_, _ = h.Write(b[:])
	return &wordGen{rng: h.Sum64(), words: words, vocab: vocab, next: start}
}

// float returns the next number in [0, 1) of a splitmix64 sequence.
func (g *wordGen) float() float64 {
	g.rng += 0x9e3779b97f4a7c15
	z := g.rng
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// layUntil lays words until one starts at or after t.
func (g *wordGen) layUntil(t float64) {
	for g.next < t {
		dur := 0.20 + 0.16*g.float()
		gap := 0.06 + 0.12*g.float()
		pick, fromVocab, conf := g.float(), g.float(), g.float()
		text := g.words[int(pick*float64(len(g.words)))]
		if len(g.vocab) > 0 && fromVocab < 0.2 {
			text = g.vocab[int(pick*float64(len(g.vocab)))]
		}
		g.laid = append(g.laid, Word{Text: text, Start: round3(g.next), End: round3(g.next + dur), Confidence: round3(0.70 + 0.29*conf)})
		g.next += dur + gap
	}
}

// partial returns the words that end by t.
func (g *wordGen) partial(t float64) []Word {
	g.layUntil(t)
	var out []Word
	for _, w := range g.laid {
		if w.End > t {
			break
		}
		out = append(out, w)
	}
	return out
}

// final returns the words of an utterance that ends at end: those that fit, and the next one
// clipped when enough of it is left (or when it is the only one).
func (g *wordGen) final(end float64) []Word {
	out := g.partial(end)
	if len(out) < len(g.laid) {
		if w := g.laid[len(out)]; w.Start < end && (len(out) == 0 || end-w.Start >= 0.1) {
			w.End = end
			out = append(out, w)
		}
	}
	return out
}
