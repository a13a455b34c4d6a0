package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// The search benchmark's corpus: jobs of CorpusPerJob utterances of 12 words each, drawn from a
// vocabulary of 20,000 made-up words with a Zipf distribution (a few words in most utterances,
// most words in a few), every tenth job a live session, a team in each job's custom_metadata.
const (
	CorpusPerJob = 1000
	corpusWords  = 20000
)

// corpusWord is the word of rank i (0 is the most frequent): syllables, so that prefixes
// share their starts as a language's words do.
func corpusWord(i int) string {
	syl := []string{"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "do", "fi", "gu", "ha", "je", "bo"}
	var b strings.Builder
	for n := i + 16; n > 0; n /= 16 {
		b.WriteString(syl[n%16])
	}
	return b.String()
}

// BuildSearchCorpus indexes n utterances into s (in CorpusPerJob per Apply, as a job's result
// is) and returns how long it took.
func BuildSearchCorpus(ctx context.Context, s store.Store, n int) (time.Duration, error) {
	rng := rand.New(rand.NewPCG(28, 28))
	zipf := rand.NewZipf(rng, 1.1, 1, corpusWords-1)
	start := time.Now()
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for job := 0; job*CorpusPerJob < n; job++ {
		id := fmt.Sprintf("corpus-%06d", job)
		kind := api.KindPreRecorded
		if job%10 == 9 {
			kind = api.KindLive
		}
		rec := store.JobRecord{Job: api.Job{ID: id, Kind: kind, Status: api.StatusDone, Version: 2,
			CreatedAt:      api.NewTime(created.Add(time.Duration(job) * time.Minute)),
			CustomMetadata: json.RawMessage(fmt.Sprintf(`{"team":"t%d"}`, job%7))}}
		us := make([]store.Utterance, 0, CorpusPerJob)
		for i := 0; i < CorpusPerJob && job*CorpusPerJob+i < n; i++ {
			words := make([]string, 12)
			for k := range words {
				words[k] = corpusWord(int(zipf.Uint64()))
			}
			sp := i % 3
			us = append(us, store.Utterance{JobID: id, Ref: fmt.Sprint("r/", i), Start: float64(i) * 4, End: float64(i)*4 + 3.5,
				Speaker: &sp, Language: "en", Text: strings.Join(words, " ") + "."})
		}
		res, err := s.Ingest(ctx, []store.Delivery{{DedupeKey: "corpus:" + id, Route: "job", Kind: api.CallbackJobSuccess,
			Event: api.EventTranscriptionSuccess, JobID: id, PartitionKey: id, Body: []byte(`{}`)}})
		if err != nil {
			return 0, err
		}
		if err := s.Apply(ctx, res[0].ID, func(ctx context.Context, tx store.Tx) error {
			if err := tx.PutJob(ctx, rec); err != nil {
				return err
			}
			return tx.IndexUtterances(ctx, us)
		}); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// SearchBenchQueries are the queries the benchmark times, by name: a rare word, a common one
// (in about a fifth of the utterances), two common ones, a phrase, a prefix, and filters.
var SearchBenchQueries = []struct {
	Name  string
	Query store.SearchQuery
}{
	{"rare", store.SearchQuery{Text: corpusWord(5000)}},
	{"common", store.SearchQuery{Text: corpusWord(3)}},
	{"two common", store.SearchQuery{Text: corpusWord(3) + " " + corpusWord(4)}},
	{"phrase", store.SearchQuery{Text: `"` + corpusWord(0) + " " + corpusWord(1) + `"`}},
	{"prefix", store.SearchQuery{Text: corpusWord(200)[:4] + "*"}},
	{"common, kind live", store.SearchQuery{Text: corpusWord(3), List: api.ListQuery{Kind: []api.JobKind{api.KindLive}}}},
	{"rare, custom_metadata", store.SearchQuery{Text: corpusWord(5000), List: api.ListQuery{CustomMetadata: json.RawMessage(`{"team":"t3"}`)}}},
	{"common, offset 1000", store.SearchQuery{Text: corpusWord(3), List: api.ListQuery{Offset: api.Int(1000)}}},
}

// SearchLatency runs each of SearchBenchQueries rounds times on se and reports, per query, its
// median and 99th percentile (ms) and the hits of its first page; b's iterations are the rounds.
func SearchLatency(b *testing.B, se store.Searcher) {
	for _, q := range SearchBenchQueries {
		b.Run(strings.ReplaceAll(q.Name, " ", "_"), func(b *testing.B) {
			var lat []time.Duration
			var hits int
			for b.Loop() {
				start := time.Now()
				p, err := se.Search(b.Context(), q.Query)
				lat = append(lat, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				hits = len(p.Items)
			}
			slices.Sort(lat)
			pct := func(p float64) float64 {
				return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.5), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			b.ReportMetric(float64(hits), "hits")
		})
	}
}
