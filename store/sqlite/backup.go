package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/internal/atomicfile"
	"github.com/scribehook/scribehook/internal/logx"
)

// Defaults of BackupOptions.
const (
	DefaultBackupPagesPerStep = 256
	DefaultBackupPause        = 5 * time.Millisecond
)

// BackupOptions configures Backup.
type BackupOptions struct {
	// PagesPerStep is how many pages one step of the copy writes (default 256, 1 MiB with
	// 4 KiB pages).
	PagesPerStep int
	// Pause is the sleep between two steps (default 5 ms), which leaves the disk to ingest.
	Pause time.Duration
	// BusyTimeout bounds the wait for a lock held by the running serve, as Config.BusyTimeout
	// (default 5 s).
	BusyTimeout time.Duration
	// Logger receives a line per finished backup; nil discards it.
	Logger logrus.FieldLogger
}

// BackupResult says what Backup copied.
type BackupResult struct {
	// Path is the backup file, absolute.
	Path string
	// Pages and Bytes are the size of the copy.
	Pages int
	Bytes int64
	// SchemaVersion is the latest migration the copied database has applied: the restore
	// needs a scribehook that knows it (an older binary refuses it with ErrSchemaTooNew).
	SchemaVersion int
	// Steps counts the steps of the copy.
	Steps    int
	Duration time.Duration
}

// Backup copies the database at src into dst, a consistent snapshot taken while a serve may
// be running on src in this process or another, through SQLite's online backup API.
//
// It opens src on a connection of its own, read-only, and holds one read transaction on it
// for the whole copy: in WAL mode a reader never blocks the writer, so ingest goes on; and the
// copy is the database as of that transaction's start, however many commits happen during
// it. (Stepped without that transaction, sqlite3_backup_step starts over whenever another
// connection commits, which under steady ingest may be never-ending.) The copy is written in
// steps of PagesPerStep pages with a Pause between them, into a temporary file in dst's
// directory; once complete it is switched out of WAL mode (one self-contained file),
// checked with PRAGMA integrity_check, synced, and renamed over dst: dst is never seen half
// written, and a failed backup leaves dst as it was.
//
// The one cost to the running serve: the WAL cannot be checkpointed past the backup's
// snapshot while it runs, so it grows by what is written meanwhile, and is checkpointed after.
// (A database that could not be put in WAL mode, on some network file systems, is copied in
// one step instead, during which its writers wait.)
//
// Restoring is copying the file into place while serve is stopped (removing any -wal and -shm
// files beside the old database first); serve migrates an older schema on start.
func Backup(ctx context.Context, src, dst string, opts BackupOptions) (BackupResult, error) {
	start := time.Now()
	opts = opts.withDefaults()
	res := BackupResult{}
	if err := checkBackupPaths(src, dst); err != nil {
		return res, err
	}
	abs, err := filepath.Abs(dst)
	if err != nil {
		return res, fmt.Errorf("backup: %w", err)
	}
	res.Path = abs
	tmpf, err := os.CreateTemp(filepath.Dir(abs), "."+filepath.Base(abs)+".tmp-*")
	if err != nil {
		return res, fmt.Errorf("backup: create temporary file: %w", err)
	}
	tmp := tmpf.Name()
	_ = tmpf.Close()
	defer func() {
		for _, suffix := range []string{"", "-journal", "-wal", "-shm"} {
			_ = os.Remove(tmp + suffix)
		}
	}()
	if err := copyDatabase(ctx, src, tmp, opts, &res); err != nil {
		return res, fmt.Errorf("backup %s: %w", src, err)
	}
	if err := checkCopy(ctx, tmp, opts); err != nil {
		return res, fmt.Errorf("backup %s: %w", src, err)
	}
	fi, err := os.Stat(tmp)
	if err != nil {
		return res, fmt.Errorf("backup: %w", err)
	}
	res.Bytes = fi.Size()
	if err := atomicfile.Rename(tmp, abs); err != nil {
		return res, fmt.Errorf("backup into %s: %w", abs, err)
	}
	res.Duration = time.Since(start)
	opts.Logger.WithFields(logrus.Fields{
		"src": src, "dst": abs, "pages": res.Pages, "bytes": res.Bytes, "schema_version": res.SchemaVersion,
		"steps": res.Steps, "duration": res.Duration,
	}).Info("sqlite: backup written")
	return res, nil
}

func (o BackupOptions) withDefaults() BackupOptions {
	if o.PagesPerStep <= 0 {
		o.PagesPerStep = DefaultBackupPagesPerStep
	}
	if o.Pause < 0 {
		o.Pause = 0
	} else if o.Pause == 0 {
		o.Pause = DefaultBackupPause
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	o.Logger = logx.OrDiscard(o.Logger)
	return o
}

// checkBackupPaths refuses a source that does not exist (opening it would create an empty
// database) and a destination that is the source.
func checkBackupPaths(src, dst string) error {
	if src == "" || dst == "" {
		return errors.New("backup: source and destination paths are required")
	}
	if isMemory(src) {
		return fmt.Errorf("backup: in-memory database %q has no file to copy", src)
	}
	sfi, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("backup: database %w", err)
	}
	if dfi, err := os.Stat(dst); err == nil && os.SameFile(sfi, dfi) {
		return fmt.Errorf("backup: destination %s is the database itself", dst)
	}
	return nil
}

// copyDatabase runs the online backup from src into the empty file tmp.
func copyDatabase(ctx context.Context, src, tmp string, opts BackupOptions, res *BackupResult) error {
	v := url.Values{}
	v.Set("mode", "ro")
	v.Set("_busy_timeout", strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10))
	sconn, closeSrc, err := openConn(ctx, fileURI(src)+"?"+v.Encode())
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer closeSrc()
	// The snapshot: a read transaction started by its first read, held until the copy ends.
	if _, err := sconn.ExecContext(ctx, `BEGIN`); err != nil {
		return fmt.Errorf("begin read: %w", err)
	}
	defer func() { _, _ = sconn.ExecContext(context.Background(), `ROLLBACK`) }()
	if res.SchemaVersion, err = schemaVersion(ctx, sconn); err != nil {
		return err
	}
	var mode string
	if err := sconn.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return fmt.Errorf("read journal mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		// Outside WAL mode the held snapshot is a lock that keeps every writer waiting: the
		// copy is then made in one step, as short as it can be.
		opts.PagesPerStep = -1
		opts.Logger.WithField("journal_mode", mode).Warn("sqlite: backup of a database not in WAL mode: writers wait until the copy ends")
	}
	dconn, closeDst, err := openConn(ctx, fileURI(tmp))
	if err != nil {
		return fmt.Errorf("open copy: %w", err)
	}
	defer closeDst()
	return dconn.Raw(func(d any) error {
		return sconn.Raw(func(s any) error {
			return stepBackup(ctx, d.(*sqlite3.SQLiteConn), s.(*sqlite3.SQLiteConn), opts, res)
		})
	})
}

// openConn opens one connection of its own to the database at dsn: the backup API works on
// two connections, not on pools. The func returned closes the connection and its pool.
func openConn(ctx context.Context, dsn string) (*sql.Conn, func(), error) {
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		_ = db.Close()
		return nil, nil, err
	}
	return conn, func() { _ = conn.Close(); _ = db.Close() }, nil
}

// schemaVersion reads the latest applied migration on c.
func schemaVersion(ctx context.Context, c *sql.Conn) (int, error) {
	var v int
	err := c.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("read schema version (is it a scribehook database?): %w", err)
	}
	return v, nil
}

func stepBackup(ctx context.Context, dst, src *sqlite3.SQLiteConn, opts BackupOptions, res *BackupResult) error {
	b, err := dst.Backup("main", src, "main")
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	for {
		done, err := b.Step(opts.PagesPerStep)
		res.Steps++
		if err != nil {
			_ = b.Close()
			return fmt.Errorf("step: %w", err)
		}
		if done {
			res.Pages = b.PageCount()
			if err := b.Close(); err != nil {
				return fmt.Errorf("finish: %w", err)
			}
			return nil
		}
		// Step reports busy and locked as not done: both are retried after the pause.
		select {
		case <-ctx.Done():
			_ = b.Close()
			return ctx.Err()
		case <-time.After(opts.Pause):
		}
	}
}

// checkCopy makes the copy a single file (the source's WAL mode is copied with its pages) and
// runs integrity_check on it.
func checkCopy(ctx context.Context, path string, opts BackupOptions) error {
	db, err := sql.Open("sqlite3", fileURI(path)+"?_synchronous=FULL")
	if err != nil {
		return fmt.Errorf("open copy: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode = DELETE`).Scan(&mode); err != nil {
		return fmt.Errorf("copy: journal mode: %w", err)
	}
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return fmt.Errorf("copy: integrity check: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("copy: integrity check: %w", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("copy: integrity check: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("copy failed its integrity check: %v", problems)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("close copy: %w", err)
	}
	// SQLite synced its own writes; this covers a file system that needs the handle's own.
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
