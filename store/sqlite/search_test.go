package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// indexOne applies a delivery that indexes one utterance of job id.
func indexOne(t *testing.T, s *Store, key, id, text string) {
	t.Helper()
	res, err := s.Ingest(t.Context(), []store.Delivery{{DedupeKey: key, Route: "job", Kind: api.CallbackJobSuccess,
		Event: "transcription.success", JobID: id, PartitionKey: id, Body: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Apply(t.Context(), res[0].ID, func(ctx context.Context, tx store.Tx) error {
		j := api.Job{ID: id, Kind: api.KindPreRecorded, Status: api.StatusDone, Version: 2}
		if err := tx.PutJob(ctx, store.JobRecord{Job: j}); err != nil {
			return err
		}
		return tx.IndexUtterances(ctx, []store.Utterance{{JobID: id, Ref: "r/0", Start: 1, End: 2, Language: "en", Text: text}})
	})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

// rawCount counts with query on a connection of the test's own.
func rawCount(t *testing.T, path, query string) int {
	t.Helper()
	db, err := sql.Open("sqlite3", fileURI(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(t.Context(), query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func tempPath(t *testing.T) string { return filepath.Join(t.TempDir(), "scribehook.db") }
