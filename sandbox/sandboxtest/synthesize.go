package sandboxtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/scribehook/scribehook/sandbox/audio"
)

// Synthesize makes a recording named name in which each sentence is one utterance, for the
// scripted engine StartService gives the sandbox: a 16 kHz mono WAV long enough for the
// sentences (a quiet tone: its content does not matter, the sidecar decides the words) and the
// sidecar timing each sentence's words 0.4 s apart from 0.5 s (each lasting 0.3 s), 0.6 s more
// between sentences. The words are the sentences' split on white space. The times are part of
// the contract: examples print them.
func Synthesize(name string, sentences ...string) (Recording, error) {
	type word struct {
		Word  string  `json:"word"`
		Start float64 `json:"start"`
		End   float64 `json:"end"`
	}
	type utterance struct {
		Words []word `json:"words"`
	}
	var utts []utterance
	t := 0.5
	for _, s := range sentences {
		var u utterance
		for _, w := range strings.Fields(s) {
			u.Words = append(u.Words, word{Word: w, Start: round(t), End: round(t + 0.3)})
			t += 0.4
		}
		utts = append(utts, u)
		t += 0.6
	}
	sidecar, err := json.Marshal(map[string]any{"utterances": utts})
	if err != nil {
		return Recording{}, fmt.Errorf("encode the sidecar: %w", err)
	}
	const rate = 16000
	samples := make([]float32, int((t+0.5)*rate))
	for i := range samples {
		samples[i] = float32(0.1 * math.Sin(2*math.Pi*440*float64(i)/rate))
	}
	var b bytes.Buffer
	if err := audio.Encode16(&b, [][]float32{samples}, rate); err != nil {
		return Recording{}, fmt.Errorf("encode the WAV: %w", err)
	}
	return Recording{Name: name, WAV: b.Bytes(), Sidecar: sidecar}, nil
}

// round keeps word times to milliseconds, as a service would send them.
func round(x float64) float64 { return math.Round(x*1000) / 1000 }
