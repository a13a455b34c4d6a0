//go:build sqlite_fts5 || fts5

package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/internal/benchcpu"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/storetest"
)

// TestSearchIndexRebuilt: a database written by a build without FTS5 (rows the text index
// lacks, marked stale, or no text index at all) is searched in full once a build with FTS5
// opens it.
func TestSearchIndexRebuilt(t *testing.T) {
	for _, tc := range []struct {
		name, damage string
	}{
		{"stale", `INSERT INTO search_utterances (job_id, ref, start_s, end_s, language, translation, text)
			VALUES ('job-1', 'r/1', 3, 4, 'en', 0, 'written without the index');
			INSERT INTO search_state (id, stale) VALUES (1, 1)`},
		{"no index", `DROP TABLE search_fts;
			INSERT INTO search_utterances (job_id, ref, start_s, end_s, language, translation, text)
			VALUES ('job-1', 'r/1', 3, 4, 'en', 0, 'written without the index')`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tempPath(t)
			s := openTemp(t, Config{Path: path})
			indexOne(t, s, "k1", "job-1", "indexed with the index")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("sqlite3", fileURI(path))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(t.Context(), tc.damage); err != nil {
				t.Fatal(err)
			}
			db.Close()
			s = openTemp(t, Config{Path: path})
			p, err := s.Search(t.Context(), store.SearchQuery{Text: "index"})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Items) != 2 || p.Items[0].Text != "indexed with the index" || p.Items[1].Text != "written without the index" {
				t.Errorf("hits after reopening: %+v, want both utterances", p.Items)
			}
			if n := rawCount(t, path, `SELECT count(*) FROM search_state`); n != 0 {
				t.Errorf("search_state keeps %d rows after the rebuild", n)
			}
		})
	}
}

// BenchmarkSearch1M times the queries of storetest.SearchBenchQueries over 1,000,000
// utterances (SCRIBEHOOK_SEARCH_CORPUS=N for another size). The corpus is built once into
// SCRIBEHOOK_SEARCH_DB when that file does not exist yet, and reused by later runs; without
// it, into a temporary directory, each run.
func BenchmarkSearch1M(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("SCRIBEHOOK_SEARCH_CORPUS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	path := os.Getenv("SCRIBEHOOK_SEARCH_DB")
	if path == "" {
		path = filepath.Join(b.TempDir(), "search.db")
	}
	_, statErr := os.Stat(path)
	s, err := Open(b.Context(), Config{Path: path, Synchronous: SynchronousNormal})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if statErr != nil {
		took, err := storetest.BuildSearchCorpus(b.Context(), s, n)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("corpus of %d utterances indexed in %s (%.1f µs each)", n, took, float64(took.Microseconds())/float64(n))
	}
	storetest.SearchLatency(b, s)
}

// BenchmarkIndexResult2h is the search index's share of applying a 2-hour result (20,000
// words): its utterances read from the result's bytes (store.ResultUtterances, what the pipeline
// does) and indexed (Tx.IndexUtterances) in one Apply, against the same Apply without them
// (the record alone); cpu-µs/op and the bytes the database grows by per result.
func BenchmarkIndexResult2h(b *testing.B) {
	payload, err := json.Marshal(apitest.Result(1, 2*time.Hour, 20000))
	if err != nil {
		b.Fatal(err)
	}
	for _, index := range []bool{false, true} {
		b.Run(fmt.Sprintf("index=%v", index), func(b *testing.B) {
			s, err := Open(b.Context(), Config{Path: filepath.Join(b.TempDir(), "index.db")})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			size := func() int64 { return dbBytes(b, s) }
			before := size()
			cpu := benchcpu.Start(b)
			n := 0
			for b.Loop() {
				n++
				id := fmt.Sprintf("job-%d", n)
				res, err := s.Ingest(b.Context(), []store.Delivery{{DedupeKey: id, Route: "job", Kind: api.CallbackJobSuccess,
					Event: api.EventTranscriptionSuccess, JobID: id, PartitionKey: id, Body: []byte(`{}`)}})
				if err != nil {
					b.Fatal(err)
				}
				err = s.Apply(b.Context(), res[0].ID, func(ctx context.Context, tx store.Tx) error {
					j := api.Job{ID: id, Kind: api.KindPreRecorded, Status: api.StatusDone, Version: 2, Result: payload}
					if err := tx.PutJob(ctx, store.JobRecord{Job: j}); err != nil {
						return err
					}
					if !index {
						return nil
					}
					return tx.IndexUtterances(ctx, store.ResultUtterances(id, payload))
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			cpu.Report()
			b.ReportMetric(float64(size()-before)/float64(n), "db-B/op")
		})
	}
}

// dbBytes is the size of the store's database, its WAL checkpointed into it first.
func dbBytes(b *testing.B, s *Store) int64 {
	b.Helper()
	var n int64
	err := s.withWriter(b.Context(), func(c *sql.Conn) error {
		if _, err := c.ExecContext(b.Context(), `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			return err
		}
		return c.QueryRowContext(b.Context(), `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`).Scan(&n)
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkIndexLiveFinal is the search index's share of applying a live final: the message
// read for its utterance (store.LiveUtterances) and indexed, in an Apply that also appends the
// message (index=false: the append alone); cpu-µs/op and the bytes the database grows by.
func BenchmarkIndexLiveFinal(b *testing.B) {
	for _, index := range []bool{false, true} {
		b.Run(fmt.Sprintf("index=%v", index), func(b *testing.B) {
			s, err := Open(b.Context(), Config{Path: filepath.Join(b.TempDir(), "live.db")})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			before := dbBytes(b, s)
			cpu := benchcpu.Start(b)
			n := 0
			for b.Loop() {
				n++
				payload := fmt.Appendf(nil, `{"type":"transcript","session_id":"s","created_at":"2026-11-24T10:00:00.000Z","data":{"id":"u%d","is_final":true,"utterance":{"start":%d,"end":%d.5,"confidence":0.93,"channel":0,"language":"en","text":"and that is why the quarterly numbers look better than we expected","words":[]}}}`, n, n, n)
				res, err := s.Ingest(b.Context(), []store.Delivery{{DedupeKey: fmt.Sprint("k", n), Route: "job", Kind: api.CallbackLiveMessage,
					Event: "live.transcript", JobID: "s", PartitionKey: "s", Body: payload}})
				if err != nil {
					b.Fatal(err)
				}
				id := res[0].ID
				err = s.Apply(b.Context(), id, func(ctx context.Context, tx store.Tx) error {
					if _, err := tx.AppendLiveMessage(ctx, store.LiveMessage{SessionID: "s", Type: api.MessageTranscript,
						Category: api.CategoryFinalTranscripts, InboxID: id, Payload: payload}); err != nil {
						return err
					}
					if !index {
						return nil
					}
					return tx.IndexUtterances(ctx, store.LiveUtterances("s", id, payload))
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			cpu.Report()
			b.ReportMetric(float64(dbBytes(b, s)-before)/float64(n), "db-B/op")
		})
	}
}

// TestContractJobsFirst runs the contract suite with Search always on its jobs-first plan, which
// it otherwise takes for queries that match many utterances: both plans give the same hits in
// the same order.
func TestContractJobsFirst(t *testing.T) {
	storetest.Run(t, storetest.Features{ReleasesLeases: true}, func(t *testing.T) store.Store {
		return openTemp(t, Config{jobsFirst: true})
	})
}

// TestSearchPlanChoice: the estimate counts the utterances holding a query's rarest word (a
// prefix: every word it starts, an utterance holding two of them counted twice: a bound from
// above), so the plan follows the query.
func TestSearchPlanChoice(t *testing.T) {
	s := openTemp(t, Config{})
	for i, text := range []string{"alpha beta", "alpha gamma", "alpha alphabet", "beta"} {
		indexOne(t, s, fmt.Sprint("k", i), fmt.Sprint("job-", i), text)
	}
	for q, want := range map[string]int64{"alpha": 3, "beta": 2, "alpha beta": 2, "alp*": 4, `"alpha gamma"`: 1, "zeta": 0} {
		terms, err := store.ParseSearch(q)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := estimateMatches(t.Context(), s.r, terms); err != nil || n != want {
			t.Errorf("estimateMatches(%s) = %d, %v; want %d", q, n, err, want)
		}
	}
}

// BenchmarkIndexLiveGroup is the search index's share of applying live finals as the pipeline
// applies them under load: 64 per transaction (ApplyGroup), each appended, and indexed one
// call per final (per=final) or one call for the group (per=group, what the pipeline does);
// index=none appends only. cpu-µs/op is per final.
func BenchmarkIndexLiveGroup(b *testing.B) {
	const group = 64
	for _, mode := range []string{"none", "final", "group"} {
		b.Run("per="+mode, func(b *testing.B) {
			s, err := Open(b.Context(), Config{Path: filepath.Join(b.TempDir(), "live.db")})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			n := 0
			payloads := map[int64][]byte{}
			next := func() ([]int64, error) {
				ds := make([]store.Delivery, group)
				for i := range ds {
					n++
					payload := fmt.Appendf(nil, `{"type":"transcript","session_id":"s","created_at":"2026-11-24T10:00:00.000Z","data":{"id":"u%d","is_final":true,"utterance":{"start":%d,"end":%d.5,"confidence":0.93,"channel":0,"language":"en","text":"and that is why the quarterly numbers look better than we expected %d","words":[]}}}`, n, n, n, n)
					ds[i] = store.Delivery{DedupeKey: fmt.Sprint("k", n), Route: "job", Kind: api.CallbackLiveMessage,
						Event: "live.transcript", JobID: "s", PartitionKey: "s", Body: payload}
				}
				res, err := s.Ingest(b.Context(), ds)
				if err != nil {
					return nil, err
				}
				ids := make([]int64, len(res))
				for i, r := range res {
					ids[i] = r.ID
					payloads[r.ID] = ds[i].Body
				}
				return ids, nil
			}
			cpu := benchcpu.Start(b)
			for i := 0; i < b.N; i += group {
				b.StopTimer()
				ids, err := next()
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				err = s.ApplyGroup(b.Context(), ids, func(ctx context.Context, tx store.Tx, marked []int64) error {
					var all []store.Utterance
					for _, id := range marked {
						p := payloads[id]
						if _, err := tx.AppendLiveMessage(ctx, store.LiveMessage{SessionID: "s", Type: api.MessageTranscript,
							Category: api.CategoryFinalTranscripts, InboxID: id, Payload: p}); err != nil {
							return err
						}
						switch mode {
						case "final":
							if err := tx.IndexUtterances(ctx, store.LiveUtterances("s", id, p)); err != nil {
								return err
							}
						case "group":
							all = append(all, store.LiveUtterances("s", id, p)...)
						}
					}
					if len(all) > 0 {
						return tx.IndexUtterances(ctx, all)
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			cpu.Report()
		})
	}
}
