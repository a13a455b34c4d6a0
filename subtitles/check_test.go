package subtitles

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// Each rule is reported with its cue, value and limit, and counted in the rates.
func TestCheckRules(t *testing.T) {
	p := DefaultProfile()
	cues := []Cue{
		// 0: fine.
		{Start: ms(1000), End: ms(2500), Lines: []string{"A perfectly fine line."}, Speakers: []string{"A"}},
		// 1: gap of 50 ms, 43 runes, too fast (86 runes in 2 s), ends on "the" before cue 2.
		{Start: ms(2550), End: ms(4550), Lines: []string{strings.Repeat("é", 43), "and then we went to the"}, Speakers: []string{"A", "A"}},
		// 2: overlaps, too short, one word continuing cue 1 (orphan).
		{Start: ms(4500), End: ms(4800), Lines: []string{"station."}, Speakers: []string{"A"}},
		// 3: starts before cue 2, longer than 7 s, three lines, text that breaks files.
		{Start: ms(4400), End: ms(12000), Lines: []string{"a  b", "x --> y", " z"}, Speakers: []string{"B", "B", "B"}},
		// 4: end before start.
		{Start: ms(20000), End: ms(19000), Lines: []string{"Backwards."}},
		// 5: dual cue without dashes; 6: two lines that fit one, line broken after "the".
		{Start: ms(30000), End: ms(32000), Lines: []string{"Yes.", "No."}, Speakers: []string{"A", "B"}, Dual: true},
		{Start: ms(40000), End: ms(42000), Lines: []string{"We saw the", "big house."}, Speakers: []string{"A", "A"}},
	}
	r := Check(cues, p)
	type key struct {
		rule string
		cue  int
	}
	var got []key
	for _, v := range r.Violations {
		got = append(got, key{v.Rule, v.Cue})
		if v.Hard != isHard(v.Rule) {
			t.Errorf("%v: hard = %v", v, v.Hard)
		}
	}
	for _, want := range []key{
		{RuleGap, 1}, {RuleCPL, 1}, {RuleCPS, 1}, {RuleBadBreak, 1},
		{RuleOverlap, 2}, {RuleMinDuration, 2}, {RuleOrphan, 2},
		{RuleOrder, 3}, {RuleMaxDuration, 3}, {RuleLines, 3}, {RuleText, 3},
		{RuleTiming, 4}, {RuleDual, 5}, {RuleOneLine, 6}, {RuleBadBreak, 6},
	} {
		if !slices.Contains(got, want) {
			t.Errorf("missing %v", want)
		}
	}
	if slices.ContainsFunc(r.Violations, func(v Violation) bool { return v.Cue == 0 }) {
		t.Errorf("cue 0 flagged: %v", r.Violations)
	}
	for _, v := range r.Violations {
		if v.Rule == RuleCPL && (v.Value != 43 || v.Limit != 42 || v.Line != 0) {
			t.Errorf("cpl violation %v", v)
		}
		if v.Rule == RuleGap && (v.Value != 0.05 || v.Limit < 0.083 || v.Limit > 0.084) {
			t.Errorf("gap violation %v", v)
		}
		if v.Rule == RuleCPS && v.Cue == 1 && v.Value != 33 {
			t.Errorf("cps violation %v", v)
		}
	}
	if r.Cues != 7 || r.Pairs != 6 || r.Rates.Gap != 1.0/6 || r.Rates.Overlap != 2.0/6 || r.Rates.Lines != 1.0/7 {
		t.Errorf("rates %+v (%d cues, %d pairs)", r.Rates, r.Cues, r.Pairs)
	}
	if len(r.Hard()) == 0 || r.Count(RuleText) != 3 {
		t.Errorf("hard %d, text %d", len(r.Hard()), r.Count(RuleText))
	}
	if s := r.Violations[0].String(); !strings.Contains(s, "cue 2") {
		t.Errorf("String() = %q", s)
	}
}

// BBC's time per word is part of the minimum-duration rule; a start more than 3 frames after
// the speech is a sync problem.
func TestCheckPerWordAndSync(t *testing.T) {
	p := must(ProfileByName(BBC))
	cues := []Cue{{Start: ms(1200), End: ms(2300), Lines: []string{"one two three four five"}, SpeechStart: ms(1000), SpeechEnd: ms(2200)}}
	r := Check(cues, p)
	if r.Count(RuleMinDuration) != 1 || r.Count(RuleSync) != 1 || len(r.Hard()) != 0 {
		t.Errorf("%v", r.Violations)
	}
}
