package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// sidecar is the JSON format documented on Scripted.
type sidecar struct {
	Utterances *[]sidecarUtterance `json:"utterances"`
}

type sidecarUtterance struct {
	Start      *float64      `json:"start"`
	End        *float64      `json:"end"`
	Channel    int           `json:"channel"`
	Speaker    *int          `json:"speaker"`
	Language   string        `json:"language"`
	Text       string        `json:"text"`
	Confidence *float64      `json:"confidence"`
	Words      []sidecarWord `json:"words"`
}

type sidecarWord struct {
	Word       string   `json:"word"`
	Start      *float64 `json:"start"`
	End        *float64 `json:"end"`
	Confidence *float64 `json:"confidence"`
}

// parseSidecar reads a sidecar; ok is false when it has no utterances member.
func parseSidecar(b []byte, channels int, lang string) ([]Utterance, bool, error) {
	var sc sidecar
	if err := json.Unmarshal(b, &sc); err != nil {
		return nil, false, unsupported(ScriptedName, "sidecar: %v", err)
	}
	if sc.Utterances == nil {
		return nil, false, nil
	}
	bad := func(i int, format string, args ...any) error {
		return unsupported(ScriptedName, "sidecar: utterance %d: %s", i, fmt.Sprintf(format, args...))
	}
	utts := []Utterance{}
	perChannel := make([]int, channels)
	for i, su := range *sc.Utterances {
		if su.Channel < 0 || su.Channel >= channels {
			return nil, false, bad(i, "channel %d; the audio has %d", su.Channel, channels)
		}
		u := Utterance{Channel: su.Channel, Language: su.Language, Text: su.Text}
		for j, sw := range su.Words {
			w := Word{Text: strings.TrimSpace(sw.Word), Confidence: 1}
			switch {
			case w.Text == "":
				return nil, false, bad(i, "word %d is empty", j)
			case sw.Start == nil || sw.End == nil:
				return nil, false, bad(i, "word %d (%q) needs start and end", j, w.Text)
			case !validTime(*sw.Start) || !validTime(*sw.End) || *sw.End < *sw.Start:
				return nil, false, bad(i, "word %d (%q) has start %v and end %v; times are seconds ≥ 0 and start ≤ end", j, w.Text, *sw.Start, *sw.End)
			}
			w.Start, w.End = *sw.Start, *sw.End
			if sw.Confidence != nil {
				if !(*sw.Confidence >= 0 && *sw.Confidence <= 1) {
					return nil, false, bad(i, "word %d (%q) has confidence %v outside 0–1", j, w.Text, *sw.Confidence)
				}
				w.Confidence = *sw.Confidence
			}
			u.Words = append(u.Words, w)
		}
		switch {
		case su.Start != nil && su.End != nil:
			u.Start, u.End = *su.Start, *su.End
		case len(u.Words) > 0:
			u.Start, u.End = u.Words[0].Start, u.Words[len(u.Words)-1].End
			if su.Start != nil {
				u.Start = *su.Start
			}
			if su.End != nil {
				u.End = *su.End
			}
		default:
			return nil, false, bad(i, "needs words or start and end")
		}
		if !validTime(u.Start) || !validTime(u.End) || u.End < u.Start {
			return nil, false, bad(i, "start %v and end %v; times are seconds ≥ 0 and start ≤ end", u.Start, u.End)
		}
		if su.Speaker != nil {
			u.Speaker = *su.Speaker
		} else if channels > 1 {
			u.Speaker = su.Channel
		} else {
			u.Speaker = perChannel[su.Channel] % 2
		}
		perChannel[su.Channel]++
		if u.Language == "" {
			u.Language = lang
		}
		if u.Text == "" {
			u.Text = joinWords(u.Words)
		}
		u.Confidence = meanConfidence(u.Words)
		if su.Confidence != nil {
			u.Confidence = *su.Confidence
		}
		utts = append(utts, u)
	}
	sortUtterances(utts)
	return utts, true, nil
}

func validTime(t float64) bool { return t >= 0 && !math.IsInf(t, 1) }
