package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// searchTests are the search subtests; a store without a Searcher, or one that answers
// store.ErrSearchUnavailable (SQLite built without FTS5), skips them.
var searchTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"Search", testSearch},
	{"SearchPaging", testSearchPaging},
	{"SearchIndexesOnce", testSearchIndexesOnce},
	{"SearchPruned", testSearchPruned},
}

// searcher is s as a store.Searcher, or skips the test.
func searcher(t *testing.T, s store.Store) store.Searcher {
	t.Helper()
	se, ok := s.(store.Searcher)
	if !ok {
		t.Skip("the store does not implement store.Searcher")
	}
	_, err := se.Search(t.Context(), store.SearchQuery{Text: "probe"})
	if errors.Is(err, store.ErrSearchUnavailable) {
		t.Skipf("search unavailable: %v", err)
	}
	if err != nil {
		t.Fatalf("Search(probe): %v", err)
	}
	return se
}

// The search fixture: a pre-recorded job with a translation, a live session, a newer job in two
// languages, created a day apart.
const (
	searchJobA    = "job-a"
	searchSession = "session-b"
	searchJobC    = "job-c"
)

func resultJSON(utts string, translation string) json.RawMessage {
	r := `{"metadata":{"audio_duration":6},"transcription":{"full_transcript":"","languages":["en"],"utterances":[` + utts + `]}`
	if translation != "" {
		r += `,"translation":{"success":true,"is_empty":false,"exec_time":1,"error":null,"results":[` + translation + `]}`
	}
	return json.RawMessage(r + `}`)
}

func utt(start, end float64, speaker int, text string) string {
	return fmt.Sprintf(`{"start":%g,"end":%g,"confidence":0.9,"channel":0,"speaker":%d,"words":[{"word":"x","start":%g,"end":%g,"confidence":1}],"text":%q}`,
		start, end, speaker, start, end, text)
}

func liveFinal(id string, start, end float64, text string) string {
	return fmt.Sprintf(`{"type":"transcript","session_id":"session-b","created_at":"2024-03-02T10:00:00.000Z","data":{"id":%q,"is_final":true,"utterance":{"start":%g,"end":%g,"confidence":1,"channel":0,"words":[],"text":%q,"language":"en"}}}`,
		id, start, end, text)
}

// searchFixture stores the three jobs and their utterances, each job by one Apply as the
// pipeline does, and returns the inbox ids of the session's three messages.
func searchFixture(t *testing.T, s store.Store) []int64 {
	t.Helper()
	day := func(d int) time.Time { return time.Date(2024, 3, d, 10, 0, 0, 0, time.UTC) }
	res := ingest(t, s, delivery("search-a"), delivery("search-b1"), delivery("search-b2"), delivery("search-b3"),
		delivery("search-c"))
	a := jobRecord(searchJobA, api.StatusDone, api.KindPreRecorded, day(1), `{"team":"red"}`)
	a.Local.Final = "transcription.success"
	a.Job.Result = resultJSON(
		utt(0.5, 2, 0, "Hello world, this is the quarterly review.")+","+
			utt(2.5, 4, 1, "The revenue grew by ten percent.")+","+
			utt(4.5, 6, 0, "Hello again <b>friends</b> & family"),
		`{"error":null,"full_transcript":"","languages":["fr"],"utterances":[`+
			utt(0.5, 2, 0, "Bonjour le monde, ceci est la revue trimestrielle.")+`]}`)
	c := jobRecord(searchJobC, api.StatusDone, api.KindPreRecorded, day(3), `{"team":"blue"}`)
	c.Local.Final = "transcription.success"
	c.Job.Result = json.RawMessage(`{"transcription":{"languages":["de"],"utterances":[` +
		utt(1, 2, 0, "Hallo Welt") + `,` +
		`{"start":3,"end":4.25,"speaker":1,"language":"en","text":"hello world again","words":[]}` + `]}}`)
	for _, job := range []struct {
		inbox int64
		rec   store.JobRecord
	}{{res[0].ID, a}, {res[4].ID, c}} {
		apply(t, s, job.inbox, func(ctx context.Context, tx store.Tx) error {
			if err := tx.PutJob(ctx, job.rec); err != nil {
				return err
			}
			return tx.IndexUtterances(ctx, store.ResultUtterances(job.rec.Job.ID, job.rec.Job.Result))
		})
	}
	b := jobRecord(searchSession, api.StatusProcessing, api.KindLive, day(2), `{"team":"blue"}`)
	finals := []string{
		liveFinal("u1", 0, 1.5, "hello from the live session"),
		liveFinal("u2", 2, 3, "quarterly numbers are final"),
		liveFinal("u3", 3, 4, "goodbye everyone"),
	}
	for i, payload := range finals {
		id := res[1+i].ID
		apply(t, s, id, func(ctx context.Context, tx store.Tx) error {
			if err := tx.PutJob(ctx, b); err != nil {
				return err
			}
			m := liveMessage(searchSession, id, i)
			m.Type, m.Category, m.Payload = api.MessageTranscript, api.CategoryFinalTranscripts, json.RawMessage(payload)
			if _, err := tx.AppendLiveMessage(ctx, m); err != nil {
				return err
			}
			return tx.IndexUtterances(ctx, store.LiveUtterances(searchSession, id, []byte(payload)))
		})
	}
	return []int64{res[1].ID, res[2].ID, res[3].ID}
}

// hitKey is what a hit is compared by in the table: job, start, highlight.
func hitKeys(p store.SearchPage) []string {
	out := []string{}
	for _, h := range p.Items {
		out = append(out, fmt.Sprintf("%s@%g %s", h.JobID, h.Start, h.Highlight))
	}
	return out
}

func testSearch(t *testing.T, s store.Store) {
	se := searcher(t, s)
	searchFixture(t, s)
	const (
		aHello  = "job-a@0.5 <mark>Hello</mark> world, this is the quarterly review."
		aAgain  = "job-a@4.5 <mark>Hello</mark> again &lt;b&gt;friends&lt;/b&gt; &amp; family"
		bHello  = "session-b@0 <mark>hello</mark> from the live session"
		cHello  = "job-c@3 <mark>hello</mark> world again"
		aPhrase = "job-a@0.5 <mark>Hello world</mark>, this is the quarterly review."
		cPhrase = "job-c@3 <mark>hello world</mark> again"
	)
	for _, tc := range []struct {
		name string
		q    store.SearchQuery
		want []string
	}{
		{"word, newest job first, then time", store.SearchQuery{Text: "hello"}, []string{cHello, bHello, aHello, aAgain}},
		{"case and punctuation", store.SearchQuery{Text: "HELLO,"}, []string{cHello, bHello, aHello, aAgain}},
		{"phrase", store.SearchQuery{Text: `"hello world"`}, []string{cPhrase, aPhrase}},
		{"phrase not in a row", store.SearchQuery{Text: `"world hello"`}, []string{}},
		{"every term", store.SearchQuery{Text: `hello review`},
			[]string{"job-a@0.5 <mark>Hello</mark> world, this is the quarterly <mark>review</mark>."}},
		{"prefix", store.SearchQuery{Text: "quart*"}, []string{
			"session-b@2 <mark>quarterly</mark> numbers are final",
			"job-a@0.5 Hello world, this is the <mark>quarterly</mark> review."}},
		{"prefix phrase", store.SearchQuery{Text: `"the quart"*`},
			[]string{"job-a@0.5 Hello world, this is <mark>the quarterly</mark> review."}},
		{"markup is text", store.SearchQuery{Text: "friends"},
			[]string{"job-a@4.5 Hello again &lt;b&gt;<mark>friends</mark>&lt;/b&gt; &amp; family"}},
		{"kind", store.SearchQuery{Text: "hello", List: api.ListQuery{Kind: []api.JobKind{api.KindLive}}}, []string{bHello}},
		{"status", store.SearchQuery{Text: "hello", List: api.ListQuery{Status: []api.JobStatus{api.StatusDone}}},
			[]string{cHello, aHello, aAgain}},
		{"custom_metadata", store.SearchQuery{Text: "hello", List: api.ListQuery{CustomMetadata: json.RawMessage(`{"team":"blue"}`)}},
			[]string{cHello, bHello}},
		{"date", store.SearchQuery{Text: "hello", List: api.ListQuery{Date: "2024-03-01"}}, []string{aHello, aAgain}},
		{"after_date", store.SearchQuery{Text: "hello", List: api.ListQuery{AfterDate: "2024-03-01T12:00:00Z"}}, []string{cHello, bHello}},
		{"language", store.SearchQuery{Text: "hallo", Language: "de"}, []string{"job-c@1 <mark>Hallo</mark> Welt"}},
		{"language excludes", store.SearchQuery{Text: "hello", Language: "de"}, []string{}},
		{"translations left out", store.SearchQuery{Text: "bonjour"}, []string{}},
		{"translations", store.SearchQuery{Text: "bonjour", Translations: true},
			[]string{"job-a@0.5 <mark>Bonjour</mark> le monde, ceci est la revue trimestrielle."}},
		{"nothing", store.SearchQuery{Text: "zebra"}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := must(se.Search(t.Context(), tc.q))(t, "Search(%+v)", tc.q)
			if got := hitKeys(p); !slices.Equal(got, tc.want) {
				t.Errorf("hits\n got %q\nwant %q", got, tc.want)
			}
			if p.More {
				t.Errorf("More on a page that holds every hit")
			}
		})
	}
	// Every field of one hit.
	p := must(se.Search(t.Context(), store.SearchQuery{Text: "revenue"}))(t, "Search(revenue)")
	one := 1
	want := store.SearchHit{JobID: searchJobA, Kind: api.KindPreRecorded, Start: 2.5, End: 4, Speaker: &one, Language: "en",
		Text: "The revenue grew by ten percent.", Highlight: "The <mark>revenue</mark> grew by ten percent.",
		JobCreatedAt: time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)}
	if len(p.Items) != 1 || !searchHitEqual(p.Items[0], want) {
		t.Errorf("Search(revenue) = %+v, want [%+v]", p.Items, want)
	}
	p = must(se.Search(t.Context(), store.SearchQuery{Text: "bonjour", Translations: true}))(t, "Search(bonjour)")
	if len(p.Items) != 1 || !p.Items[0].Translation || p.Items[0].Language != "fr" {
		t.Errorf("translation hit = %+v, want translation in fr", p.Items)
	}
	p = must(se.Search(t.Context(), store.SearchQuery{Text: "goodbye"}))(t, "Search(goodbye)")
	if len(p.Items) != 1 || p.Items[0].Speaker != nil || p.Items[0].Kind != api.KindLive || p.Items[0].End != 4 {
		t.Errorf("live hit = %+v, want session-b's, no speaker, ending at 4", p.Items)
	}
	for _, bad := range []string{"", "  ", "*", `"" !`, "a*"} {
		if _, err := se.Search(t.Context(), store.SearchQuery{Text: bad}); !errors.Is(err, store.ErrBadQuery) {
			t.Errorf("Search(%q) = %v, want ErrBadQuery", bad, err)
		}
	}
}

func searchHitEqual(a, b store.SearchHit) bool {
	sp := func(p *int) int {
		if p == nil {
			return -1
		}
		return *p
	}
	return a.JobID == b.JobID && a.Kind == b.Kind && a.Start == b.Start && a.End == b.End && sp(a.Speaker) == sp(b.Speaker) &&
		a.Language == b.Language && a.Translation == b.Translation && a.Text == b.Text && a.Highlight == b.Highlight &&
		a.JobCreatedAt.Equal(b.JobCreatedAt)
}

// testSearchPaging: pages of the list's offset and limit, More while a hit follows, with and
// without the custom_metadata filter (checked in Go).
func testSearchPaging(t *testing.T, s store.Store) {
	se := searcher(t, s)
	searchFixture(t, s)
	for _, meta := range []json.RawMessage{nil, json.RawMessage(`{}`)} {
		var got []string
		for offset, page := 0, 0; ; offset, page = offset+3, page+1 {
			q := store.SearchQuery{Text: "he*", List: api.ListQuery{Offset: api.Int(offset), Limit: api.Int(3), CustomMetadata: meta}}
			p := must(se.Search(t.Context(), q))(t, "Search(%+v)", q)
			got = append(got, hitKeys(p)...)
			if wantMore := page == 0; p.More != wantMore {
				t.Fatalf("page %d (metadata %s): More %v, want %v", page, meta, p.More, wantMore)
			}
			if !p.More {
				break
			}
		}
		want := []string{
			"job-c@3 <mark>hello</mark> world again",
			"session-b@0 <mark>hello</mark> from the live session",
			"job-a@0.5 <mark>Hello</mark> world, this is the quarterly review.",
			"job-a@4.5 <mark>Hello</mark> again &lt;b&gt;friends&lt;/b&gt; &amp; family",
		}
		if !slices.Equal(got, want) {
			t.Errorf("pages (metadata %s)\n got %q\nwant %q", meta, got, want)
		}
	}
	p := must(se.Search(t.Context(), store.SearchQuery{Text: "he*", List: api.ListQuery{Offset: api.Int(4)}}))(t, "Search(past the end)")
	if len(p.Items) != 0 || p.More {
		t.Errorf("past the end: %d hits, More %v", len(p.Items), p.More)
	}
}

// testSearchIndexesOnce: an utterance indexed again under its ref (a replayed or reconciled
// delivery) is not doubled, in the same transaction or a later one.
func testSearchIndexesOnce(t *testing.T, s store.Store) {
	se := searcher(t, s)
	inbox := searchFixture(t, s)
	again := store.LiveUtterances(searchSession, inbox[0], []byte(liveFinal("u1", 0, 1.5, "hello from the live session")))
	id := ingest(t, s, delivery("search-again"))[0].ID
	apply(t, s, id, func(ctx context.Context, tx store.Tx) error {
		if err := tx.IndexUtterances(ctx, again); err != nil {
			return err
		}
		return tx.IndexUtterances(ctx, append(again, store.ResultUtterances(searchJobA, resultJSON(utt(0.5, 2, 0, "Hello world, this is the quarterly review."), ""))...))
	})
	p := must(se.Search(t.Context(), store.SearchQuery{Text: "hello", List: api.ListQuery{Limit: api.Int(100)}}))(t, "Search(hello)")
	if got := len(p.Items); got != 4 {
		t.Errorf("after indexing again: %d hits of hello, want 4: %q", got, hitKeys(p))
	}
}

// testSearchPruned: the pruner removes the utterances of the jobs it deletes and of the live
// messages it deletes, nothing else.
func testSearchPruned(t *testing.T, s store.Store) {
	se := searcher(t, s)
	searchFixture(t, s)
	// The session ends; its first final goes with its category's retention (the last message
	// of a session stays), and job-a with the jobs'.
	id := ingest(t, s, delivery("search-end"))[0].ID
	apply(t, s, id, func(ctx context.Context, tx store.Tx) error {
		rec, err := tx.Job(ctx, searchSession)
		if err != nil {
			return err
		}
		rec.Job.Status, rec.Local.Final = api.StatusDone, "live.end_session"
		rec.Job.CompletedAt = api.PtrTime(time.Date(2024, 3, 2, 11, 0, 0, 0, time.UTC))
		return tx.PutJob(ctx, rec)
	})
	hits := func() []string {
		var out []string
		for _, q := range []string{"hello", "quarterly", "goodbye", "hallo"} {
			p := must(se.Search(t.Context(), store.SearchQuery{Text: q, List: api.ListQuery{Limit: api.Int(100)}}))(t, "Search(%s)", q)
			for _, h := range p.Items {
				out = append(out, fmt.Sprintf("%s@%g", h.JobID, h.Start))
			}
		}
		return out
	}
	if _, err := s.Prune(t.Context(), store.RetentionPolicy{
		Live: map[api.MessageCategory]time.Duration{api.CategoryFinalTranscripts: time.Hour},
	}, time.Now(), false); err != nil {
		t.Fatalf("Prune(live): %v", err)
	}
	// Messages 1 and 2 of three went; the last stays.
	if got, want := hits(), []string{"job-c@3", "job-a@0.5", "job-a@4.5", "job-a@0.5", "session-b@3", "job-c@1"}; !slices.Equal(got, want) {
		t.Errorf("after pruning the live finals: %q, want %q", got, want)
	}
	if _, err := s.Prune(t.Context(), store.RetentionPolicy{Jobs: time.Hour}, time.Now(), false); err != nil {
		t.Fatalf("Prune(jobs): %v", err)
	}
	if got := hits(); len(got) != 0 {
		t.Errorf("after pruning the jobs: %q, want none", got)
	}
}

// migrationIndexesStored: a database written before the search migration holds a job's result
// and a session's finals (one copied, one by reference to its inbox row); the migration indexes
// them as the pipeline would have, and the store finds them.
func migrationIndexesStored(t *testing.T, db Database) {
	ms, err := sqlcore.LoadMigrations(db.Files)
	if err != nil {
		t.Fatal(err)
	}
	version := 0
	for _, m := range ms {
		if strings.HasSuffix(m.Name, "_search.sql") {
			version = m.Version
		}
	}
	if version == 0 {
		t.Fatal("no *_search.sql migration")
	}
	raw, open := db.New(t, version-1)
	at := time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)
	j := api.Job{ID: "old-job", Kind: api.KindPreRecorded, Status: api.StatusDone, Version: 2, CreatedAt: api.NewTime(at),
		Result: resultJSON(utt(1, 2, 0, "an archived transcript"), "")}
	seedJob(t, db, raw, j)
	seedJob(t, db, raw, api.Job{ID: "old-session", Kind: api.KindLive, Status: api.StatusDone, Version: 2, CreatedAt: api.NewTime(at.Add(time.Hour))})
	copied := liveFinal("u1", 0, 1, "archived live words")
	db.exec(t, raw, `INSERT INTO live_messages (session_id, seq, type, category, created_at, received_at, inbox_id, payload)
		VALUES ('old-session', 1, 'transcript', 'final_transcripts', ?, ?, 7, ?)`, db.Dialect.Time(at), db.Dialect.Time(at),
		db.Dialect.JSON([]byte(copied)))
	s := open(t)
	se, ok := s.(store.Searcher)
	if !ok {
		t.Skip("the store does not implement store.Searcher")
	}
	p, err := se.Search(t.Context(), store.SearchQuery{Text: "archived"})
	if errors.Is(err, store.ErrSearchUnavailable) {
		t.Skipf("search unavailable: %v", err)
	}
	if err != nil {
		t.Fatalf("Search(archived): %v", err)
	}
	want := []string{"old-session@0 <mark>archived</mark> live words", "old-job@1 an <mark>archived</mark> transcript"}
	if got := hitKeys(p); !slices.Equal(got, want) {
		t.Errorf("after the migration\n got %q\nwant %q", got, want)
	}
}
