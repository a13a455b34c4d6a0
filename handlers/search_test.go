package handlers_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/store"
)

// finalLive is a session's final transcript (id uid) or partial, as message n.
func finalLive(session string, n int, uid, text string, final bool) live {
	return newLive(session, n, api.MessageTranscript, map[string]any{"id": uid, "is_final": final,
		"utterance": map[string]any{"start": float64(n), "end": float64(n) + 0.5, "text": text, "language": "en", "words": []any{}}})
}

// TestSearchIndexing: the pipeline indexes a job's result when it applies it and a session's
// finals and translations as it applies each (grouped or not, located or not), never its
// partials, and a final delivered twice under two dedupe keys (a retry of the service that
// changed the envelope, a reconciliation) once.
func TestSearchIndexing(t *testing.T) {
	t.Parallel()
	s, r := startOn(t, handlers.Config{Partitions: 2})
	if _, err := s.Search(t.Context(), store.SearchQuery{Text: "probe"}); errors.Is(err, store.ErrSearchUnavailable) {
		t.Skip(err)
	}
	translation := newLive("sess", 4, api.MessageTranslation, map[string]any{"utterance_id": "u1", "target_language": "fr",
		"original_language": "en", "utterance": map[string]any{"text": "hello searchers"},
		"translated_utterance": map[string]any{"start": 1, "end": 1.5, "text": "bonjour chercheurs"}})
	again := finalLive("sess", 1, "u1", "hello searchers", true)
	again.Delivery.DedupeKey += ":again"
	applyAll(t, s, r.p,
		jobSuccess("job-1", sampleResult("hello from a recorded job"), ""),
		finalLive("sess", 0, "u1", "hello searche", false).Delivery,
		finalLive("sess", 1, "u1", "hello searchers", true).Delivery,
		unlocated(finalLive("sess", 2, "u2", "searchers say goodbye", true)).Delivery,
		finalLive("sess", 3, "u3", "partial searchers", false).Delivery,
		translation.Delivery,
		again.Delivery,
	)
	hits := func(q store.SearchQuery) []string {
		p, err := s.Search(t.Context(), q)
		if err != nil {
			t.Fatalf("Search(%+v): %v", q, err)
		}
		var out []string
		for _, h := range p.Items {
			out = append(out, fmt.Sprintf("%s %s@%g %s", h.Kind, h.JobID, h.Start, h.Highlight))
		}
		return out
	}
	if got, want := hits(store.SearchQuery{Text: "search*"}), []string{
		"live sess@1 hello <mark>searchers</mark>",
		"live sess@2 <mark>searchers</mark> say goodbye",
	}; !slices.Equal(got, want) {
		t.Errorf("live finals\n got %q\nwant %q", got, want)
	}
	if got, want := hits(store.SearchQuery{Text: "hello"}), []string{
		"live sess@1 <mark>hello</mark> searchers",
		"pre-recorded job-1@0.1 <mark>hello</mark> from a recorded job",
	}; !slices.Equal(got, want) {
		t.Errorf("both kinds\n got %q\nwant %q", got, want)
	}
	if got, want := hits(store.SearchQuery{Text: "chercheurs", Translations: true}), []string{
		"live sess@1 bonjour <mark>chercheurs</mark>",
	}; !slices.Equal(got, want) {
		t.Errorf("translation\n got %q\nwant %q", got, want)
	}
}
