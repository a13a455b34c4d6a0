package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// A backup taken while the store is open and written to, as serve's would be: the copy is a
// store of its own, at the schema version Backup reports.
func ExampleBackup() {
	dir, _ := os.MkdirTemp("", "scribehook-backup")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	live, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "scribehook.db")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer live.Close()
	_, _ = live.Ingest(ctx, []store.Delivery{{DedupeKey: "k1", Route: "account", Kind: "job.error",
		Event: "transcription.error", JobID: "j1", PartitionKey: "j1", Body: []byte(`{}`), ReceivedAt: time.Now()}})

	res, err := sqlite.Backup(ctx, filepath.Join(dir, "scribehook.db"), filepath.Join(dir, "copy.db"), sqlite.BackupOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("backup written:", filepath.Base(res.Path))

	restored, err := sqlite.Open(ctx, sqlite.Config{Path: res.Path})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer restored.Close()
	rows, _ := restored.PendingInbox(ctx, 0, 10)
	fmt.Println(len(rows), "pending delivery:", rows[0].DedupeKey)
	// Output:
	// backup written: copy.db
	// 1 pending delivery: k1
}

// What opening a database would do to its schema, asked before doing it: here a database that
// does not exist yet, which every migration would create.
func ExamplePendingMigrations() {
	dir, _ := os.MkdirTemp("", "scribehook-migrate")
	defer os.RemoveAll(dir)
	plan, err := sqlite.PendingMigrations(context.Background(), filepath.Join(dir, "scribehook.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("schema version", plan.Current, "up to date:", len(plan.Pending) == 0)
	fmt.Println("first:", plan.Pending[0].Name, "-", plan.Pending[0].Summary)
	// Output:
	// schema version 0 up to date: false
	// first: 0001_init.sql - Initial schema. Times are UTC text of one fixed width (2006-01-02T15:04:05.000000000Z), so
}
