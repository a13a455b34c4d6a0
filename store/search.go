package store

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/scribehook/scribehook/api"
)

// ErrSearchUnavailable is returned by Search where the database cannot search text: a SQLite
// store in a program built without the sqlite_fts5 build tag (mattn/go-sqlite3 compiles FTS5
// only with it). Such a store still keeps the utterances, so that a build with the tag finds
// them all.
var ErrSearchUnavailable = errors.New("full-text search unavailable: build with -tags sqlite_fts5")

// Utterance is one utterance of a transcript as the search index keeps it: its text (the only
// copy the index makes of a delivery) and where it is in its job or live session.
type Utterance struct {
	JobID string
	// Ref names the utterance within its job, the same whenever the same utterance is indexed
	// again (a replayed or reconciled delivery): a ref already indexed is kept, not doubled.
	Ref string
	// InboxID is the inbox row of the live message that brought it (0 for a job's result), so
	// that retention removes it with that message.
	InboxID     int64
	Start, End  float64
	Speaker     *int
	Language    string
	Translation bool
	Text        string
}

// SearchQuery is a full-text search over the utterances of every job and live session.
type SearchQuery struct {
	// Text is the query, ParseSearch's syntax: words, "exact phrases", prefix* terms, all
	// required.
	Text string
	// List filters the utterances' jobs as the job list does (status, kind, date,
	// before_date, after_date, custom_metadata) and pages the hits with its offset and limit
	// (no limit: api.DefaultListLimit).
	List api.ListQuery
	// Language keeps the utterances of one language (exact code), when set.
	Language string
	// Translations adds the utterances of translations to those of the transcripts.
	Translations bool
}

// SearchHit is one utterance that matched.
type SearchHit struct {
	JobID       string      `json:"job_id"`
	Kind        api.JobKind `json:"kind"`
	Start       float64     `json:"start"`
	End         float64     `json:"end"`
	Speaker     *int        `json:"speaker"`
	Language    string      `json:"language"`
	Translation bool        `json:"translation"`
	// Text is the utterance's plain text; Highlight is the same text escaped for HTML with
	// the matched words in <mark> elements (SearchTerms.Highlight).
	Text      string `json:"text"`
	Highlight string `json:"highlight"`
	// JobCreatedAt is the job's created_at, what the date filters and the order use.
	JobCreatedAt time.Time `json:"job_created_at"`
}

// SearchPage is a page of hits: the newest job first (created_at, then id, both descending),
// then the job's utterances in time order; More when a hit follows the page.
type SearchPage struct {
	Items []SearchHit
	More  bool
}

// Searcher searches the stored transcripts: a role both stores implement, outside Store (a
// program's own store need not). The read API, `scribehook search` and Kit.Records use it.
type Searcher interface {
	// Search lists the utterances that hold every term of q.Text, filtered and paged as
	// SearchPage says. A query that does not parse is an error wrapping ErrBadQuery; a store
	// that cannot search, ErrSearchUnavailable.
	Search(ctx context.Context, q SearchQuery) (SearchPage, error)
}

// resultUtterances is what indexing reads of a result: the utterances' text and place, not
// their words.
type resultUtterances struct {
	Transcription *struct {
		Languages  []string    `json:"languages"`
		Utterances []utterance `json:"utterances"`
	} `json:"transcription"`
	Translation *struct {
		Results []struct {
			Languages  []string    `json:"languages"`
			Utterances []utterance `json:"utterances"`
		} `json:"results"`
	} `json:"translation"`
}

type utterance struct {
	Start    float64 `json:"start"`
	End      float64 `json:"end"`
	Text     string  `json:"text"`
	Language string  `json:"language"`
	Speaker  *int    `json:"speaker"`
}

// ResultUtterances lists the utterances of a job's result (Job.Result) to index: those of its
// transcription, then those of each translation (Translation set). A result that is empty or
// does not decode gives none: search must not fail the apply of a result the kit otherwise
// stores.
func ResultUtterances(jobID string, result json.RawMessage) []Utterance {
	var r resultUtterances
	if len(result) == 0 || json.Unmarshal(result, &r) != nil {
		return nil
	}
	var us []Utterance
	add := func(ref string, u utterance, langs []string, translation bool) {
		if u.Text == "" {
			return
		}
		lang := u.Language
		if lang == "" && len(langs) > 0 {
			lang = langs[0]
		}
		us = append(us, Utterance{JobID: jobID, Ref: ref, Start: u.Start, End: u.End, Speaker: u.Speaker,
			Language: lang, Translation: translation, Text: u.Text})
	}
	if t := r.Transcription; t != nil {
		for i, u := range t.Utterances {
			add("r/"+strconv.Itoa(i), u, t.Languages, false)
		}
	}
	if t := r.Translation; t != nil {
		for k, res := range t.Results {
			for i, u := range res.Utterances {
				add("t/"+strconv.Itoa(k)+"/"+strconv.Itoa(i), u, res.Languages, true)
			}
		}
	}
	return us
}

// LiveUtterances lists what a live message (a live callback's payload, valid JSON as the
// receiver took it) brings to the index: a final transcript's utterance, or a translation's
// translated utterance; none for any other message. The ref is the utterance's id in the session, so the same final delivered twice (a
// retry, a reconciliation) is indexed once.
func LiveUtterances(sessionID string, inboxID int64, message []byte) []Utterance {
	m, err := api.DecodeValidLiveText(message)
	if err != nil {
		return nil
	}
	d := &m.Data
	u, ref, lang, translation := d.Utterance, "l/"+d.ID, d.Utterance.Language, false
	switch {
	case m.Type == api.MessageTranscript && d.IsFinal:
	case m.Type == api.MessageTranslation:
		u, ref, translation = d.TranslatedUtterance, "lt/"+d.UtteranceID+"/"+d.TargetLanguage, true
		if lang = u.Language; lang == "" {
			lang = d.TargetLanguage
		}
	default:
		return nil
	}
	if u.Text == "" {
		return nil
	}
	if ref == "l/" || ref == "lt//"+d.TargetLanguage {
		// No id to know it again by: the inbox row names it.
		ref += "#" + strconv.FormatInt(inboxID, 10)
	}
	return []Utterance{{JobID: sessionID, Ref: ref, InboxID: inboxID, Start: u.Start, End: u.End, Speaker: u.Speaker,
		Language: lang, Translation: translation, Text: u.Text}}
}
