package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Chapters come in two places: the results of the chapterization add-on (a result's
// chapterization, and post_final_transcript) and the data of the post_chapterization live
// message. Both carry the same Chapter. The service's SDKs type the add-on's results as an
// object and a chapter's sentences as an array of ChapterSentence; older producers (scribehook's
// sandbox before issue 27 among them) sent a bare array of chapters and sentences as one string.
// The types below read both forms and write only the first (docs/spec/provider-facts.md).

// ChapterizationResults is the results object of the chapterization add-on: {"chapters": [...]}
// (the interface only says "object"; chapters is the one member scribehook defines).
type ChapterizationResults struct {
	Chapters []Chapter `json:"chapters"`
}

// UnmarshalJSON reads the object form, and a bare array of chapters as its chapters.
func (c *ChapterizationResults) UnmarshalJSON(b []byte) error {
	switch firstByte(b) {
	case 'n':
		return nil
	case '[':
		var list []Chapter
		if err := json.Unmarshal(b, &list); err != nil {
			return fmt.Errorf("decode chapterization results: %w", err)
		}
		*c = ChapterizationResults{Chapters: list}
		return nil
	}
	type plain ChapterizationResults
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("decode chapterization results: %w", err)
	}
	*c = ChapterizationResults(p)
	return nil
}

// MarshalJSON writes chapters as [] when there are none: the results object is required.
func (c ChapterizationResults) MarshalJSON() ([]byte, error) {
	type plain ChapterizationResults
	if c.Chapters == nil {
		c.Chapters = []Chapter{}
	}
	return json.Marshal(plain(c))
}

// Chapter is one chapter of a session or a job.
type Chapter struct {
	Headline  string           `json:"headline"`
	Gist      string           `json:"gist"`
	Keywords  []string         `json:"keywords"`
	Start     float64          `json:"start"`
	End       float64          `json:"end"`
	Sentences ChapterSentences `json:"sentences"`
	Text      string           `json:"text"`
	Summary   string           `json:"summary,omitempty"`
	// The SDKs also name these two optional summaries; the sandbox does not write them.
	AbstractiveSummary string `json:"abstractive_summary,omitempty"`
	ExtractiveSummary  string `json:"extractive_summary,omitempty"`
}

// MarshalJSON writes keywords and sentences as [] when there are none.
func (c Chapter) MarshalJSON() ([]byte, error) {
	type plain Chapter
	if c.Keywords == nil {
		c.Keywords = []string{}
	}
	if c.Sentences == nil {
		c.Sentences = ChapterSentences{}
	}
	return json.Marshal(plain(c))
}

// ChapterSentence is one sentence of a chapter, with its words; times in seconds.
type ChapterSentence struct {
	Sentence string  `json:"sentence"`
	Start    float64 `json:"start"`
	End      float64 `json:"end"`
	Words    []Word  `json:"words"`
}

// MarshalJSON writes words as [] when there are none, as the service does for utterances.
func (s ChapterSentence) MarshalJSON() ([]byte, error) {
	type plain ChapterSentence
	if s.Words == nil {
		s.Words = []Word{}
	}
	return json.Marshal(plain(s))
}

// ChapterSentences is a chapter's sentences. It reads the array form and the older string form,
// one sentence per line, whose sentences have a text and no times or words.
type ChapterSentences []ChapterSentence

func (s *ChapterSentences) UnmarshalJSON(b []byte) error {
	switch firstByte(b) {
	case 'n':
		return nil
	case '"':
		var text string
		if err := json.Unmarshal(b, &text); err != nil {
			return fmt.Errorf("decode chapter sentences: %w", err)
		}
		*s = sentencesFromText(text)
		return nil
	}
	var list []ChapterSentence
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("decode chapter sentences: %w", err)
	}
	*s = list
	return nil
}

// sentencesFromText splits the string form at line ends, skipping blank lines; an empty text
// has no sentences (an empty, non-nil list, as the array form [] gives).
func sentencesFromText(text string) ChapterSentences {
	out := ChapterSentences{}
	for line := range strings.SplitSeq(text, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, ChapterSentence{Sentence: line})
		}
	}
	return out
}

// Texts returns the text of each sentence.
func (s ChapterSentences) Texts() []string {
	out := make([]string, len(s))
	for i, c := range s {
		out[i] = c.Sentence
	}
	return out
}

// firstByte is the first byte of b after white space, 0 for none.
func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}
