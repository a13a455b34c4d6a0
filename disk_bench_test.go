package scribehook

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/testinfra"
)

// Disk benchmark parameters: the figure of issue 22 is 20,000 small live callbacks over many
// sessions, one webhook sink, everything delivered.
const (
	diskCallbacks = 20000
	diskSessions  = 64
	diskConns     = 16
	diskToken     = "disk-bench-route-token-0123456789abcdef"
	diskHookKey   = "whsec_ZGlzay1iZW5jaC13ZWJob29rLXNpZ25pbmctc2VjcmV0"
	diskDrain     = 10 * time.Minute
)

// BenchmarkDiskPerLiveCallback measures the bytes on disk one small live callback costs once
// it is received, applied and delivered (issue 22's first figure). The whole kit receives
// 20,000 live transcript callbacks of 64 sessions, posted over loopback HTTP on 16 keep-alive
// connections (each session's in order) to a static route, and one webhook sink posts every
// event to a loopback server that answers 200. The bodies are api/apitest's live callbacks,
// with utterances of 4 to 15 words as LiveCallbackBodies makes them (about 950 bytes) and of 1
// to 2 words (about 480 bytes, the size of the figure). Once the inbox has no pending
// row, the sink no queued delivery and the server has every event, the kit is closed and the
// store measured:
//
//   - sqlite: the default store in a temporary directory; after wal_checkpoint(TRUNCATE), the
//     file's size, and the pages of each table and index from SQLite's dbstat when the driver is
//     built with -tags sqlite_dbstat, otherwise from a walk of the file's b-trees, which counts
//     the same pages (with the tag the two are compared);
//   - postgres: a schema of its own in $SCRIBEHOOK_TEST_PG_DSN (skipped without it; see
//     docs/store.md, Tests); each table's pg_table_size and each index's pg_relation_size.
//
// It reports disk-B/callback (bytes / callbacks), body-B/callback (bodies' bytes / callbacks),
// x-body (their ratio) and, for each table or index of at least 1 B/callback,
// <name>-B/callback; with -v it logs the breakdown and, per table, each column's bytes per row
// (SQLite: an estimate of the value in the record format with its header byte; PostgreSQL:
// pg_column_size). Tables and indexes are whatever the schema holds. Each iteration is one
// full run on a new database; the figures do not depend on b.N, so run it once:
//
//	go test -tags sqlite_dbstat -run '^$' -bench DiskPerLiveCallback -benchtime 1x -v .
//	scripts/pg.sh run -- go test -run '^$' -bench 'DiskPerLiveCallback/postgres' -benchtime 1x -v .
func BenchmarkDiskPerLiveCallback(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B, cfg *configs.Config) (measure func() (diskUsage, error))
	}{
		{"sqlite", func(_ *testing.B, cfg *configs.Config) func() (diskUsage, error) {
			return func() (diskUsage, error) { return measureSQLite(cfg.Store.DSN) }
		}},
		{"postgres", func(b *testing.B, cfg *configs.Config) func() (diskUsage, error) {
			schema := testinfra.PGSchema(b)
			cfg.Store.Driver, cfg.Store.DSN = "postgres", schema.DSN
			return func() (diskUsage, error) { return measurePostgres(schema.DB) }
		}},
	}
	for _, st := range stores {
		for _, words := range [][2]int{{4, 15}, {1, 2}} {
			b.Run(fmt.Sprintf("%s/words=%d-%d", st.name, words[0], words[1]), func(b *testing.B) {
				bodies := diskBodies(words[0], words[1])
				var bodyBytes int64
				for _, body := range bodies {
					bodyBytes += int64(len(body))
				}
				var last diskUsage
				for b.Loop() {
					last = diskRun(b, bodies, st.open)
				}
				n := float64(len(bodies))
				b.ReportMetric(float64(last.fileBytes)/n, "disk-B/callback")
				b.ReportMetric(float64(bodyBytes)/n, "body-B/callback")
				b.ReportMetric(float64(last.fileBytes)/float64(bodyBytes), "x-body")
				for _, o := range last.objects {
					if per := float64(o.bytes) / n; per >= 1 {
						b.ReportMetric(per, o.name+"-B/callback")
					}
				}
				b.Logf("%d live callbacks of %d sessions, %d bytes of bodies (%.0f B each); %s: %d bytes (%.0f B/callback, %.2f× the bodies); per-object bytes from %s",
					len(bodies), diskSessions, bodyBytes, float64(bodyBytes)/n, last.what, last.fileBytes, float64(last.fileBytes)/n,
					float64(last.fileBytes)/float64(bodyBytes), last.source)
				b.Log(last.table(len(bodies)))
			})
		}
	}
}

// diskBodies is diskCallbacks live callbacks of utterances of minWords to maxWords words, spread
// over diskSessions sessions (one apitest.LiveCallbackBodiesWords seed each) and interleaved:
// body i belongs to session i % diskSessions.
func diskBodies(minWords, maxWords int) [][]byte {
	per := make([][][]byte, diskSessions)
	for s := range per {
		per[s] = apitest.LiveCallbackBodiesWords(uint64(s+1), (diskCallbacks+diskSessions-1-s)/diskSessions, minWords, maxWords)
	}
	out := make([][]byte, 0, diskCallbacks)
	for i := range diskCallbacks {
		out = append(out, per[i%diskSessions][i/diskSessions])
	}
	return out
}

// diskRun is one run on a new database: serve, post, drain, close, measure.
func diskRun(b *testing.B, bodies [][]byte, open func(*testing.B, *configs.Config) func() (diskUsage, error)) diskUsage {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	hook := newDiskHook()
	defer hook.srv.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	cfg := kitConfig(dir, ln, "http://127.0.0.1:1")
	cfg.Routes = []configs.Route{{Name: "bench", TokenEnv: "SCRIBEHOOK_BENCH_UNUSED"}}
	cfg.Sinks = []configs.Sink{{Name: "hook", Kind: "webhook", URL: hook.srv.URL + "/hook", SecretEnv: "SCRIBEHOOK_BENCH_UNUSED",
		Events: []string{"*"}, Allow: []string{"127.0.0.0/8"}, Timeout: configs.DefaultSinkTimeout}}
	measure := open(b, &cfg)
	k, err := New(ctx, cfg, WithLogger(logx.Discard()), WithSecrets(configs.Secrets{
		Routes: map[string]configs.RouteSecrets{"bench": {Token: diskToken}},
		Sinks:  map[string]string{"hook": diskHookKey},
	}))
	if err != nil {
		b.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = k.Close()
		}
	}()
	if err := k.Start(ctx); err != nil {
		b.Fatal(err)
	}
	go func() { _ = k.Serve(ln) }()

	if err := diskPost("http://"+ln.Addr().String()+"/v1/callbacks/"+diskToken, bodies); err != nil {
		b.Fatal(err)
	}
	st := k.store
	deadline := time.Now().Add(diskDrain)
	for {
		backlog, err := st.InboxBacklog(ctx)
		if err != nil {
			b.Fatal(err)
		}
		depth, err := st.SinkDepth(ctx, "hook")
		if err != nil {
			b.Fatal(err)
		}
		got := hook.count()
		if backlog == 0 && depth == 0 && got >= len(bodies) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("not drained after %s: %d inbox rows pending, %d deliveries queued, %d of %d events at the webhook",
				diskDrain, backlog, depth, got, len(bodies))
		}
		time.Sleep(50 * time.Millisecond)
	}
	closed = true
	if err := k.Close(); err != nil {
		b.Fatal(err)
	}
	u, err := measure()
	if err != nil {
		b.Fatal(err)
	}
	return u
}

// diskPost posts bodies to url on diskConns keep-alive connections: connection c sends the
// bodies of the sessions s with s % diskConns == c, in index order, so that each session's
// messages arrive in order. Every answer must be 2xx.
func diskPost(url string, bodies [][]byte) error {
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: diskConns}}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	errs := make([]error, diskConns)
	for c := range diskConns {
		wg.Go(func() {
			for i := range bodies {
				if i%diskSessions%diskConns != c {
					continue
				}
				resp, err := client.Post(url, "application/json", bytes.NewReader(bodies[i]))
				if err != nil {
					errs[c] = err
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode/100 != 2 {
					errs[c] = fmt.Errorf("callback %d: %s", i, resp.Status)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// diskHook is the webhook sink's endpoint: it answers 200 and counts distinct event ids.
type diskHook struct {
	srv *httptest.Server
	mu  sync.Mutex
	ids map[string]struct{}
}

func newDiskHook() *diskHook {
	h := &diskHook{ids: map[string]struct{}{}}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		h.ids[r.Header.Get("webhook-id")] = struct{}{}
		h.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	return h
}

func (h *diskHook) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ids)
}

// diskUsage is what a database file holds after a run.
type diskUsage struct {
	what      string // what fileBytes is
	fileBytes int64
	freeBytes int64        // SQLite's free pages
	source    string       // where the per-object pages come from
	objects   []diskObject // largest first
	columns   map[string][]diskColumn
}

// diskObject is one table or index (sqlite_schema included) and the bytes of its pages.
type diskObject struct {
	name, typ, table string
	bytes            int64
	rows             int64 // tables only
}

// diskColumn is a column's estimated stored bytes: its values in SQLite's record format plus
// their serial-type bytes in the record header.
type diskColumn struct {
	name  string
	bytes int64
}

// measureSQLite checkpoints the closed database at path and reads its size and, per table and
// index, the bytes of its pages.
func measureSQLite(path string) (diskUsage, error) {
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		return diskUsage{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	var u diskUsage
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return u, fmt.Errorf("checkpoint: %w", err)
	}
	var pageSize, freePages int64
	if err := db.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&pageSize); err != nil {
		return u, err
	}
	if err := db.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&freePages); err != nil {
		return u, err
	}
	u.freeBytes = freePages * pageSize
	u.what = fmt.Sprintf("the database file after wal_checkpoint(TRUNCATE), page size %d", pageSize)
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(path + suffix); err == nil {
			u.fileBytes += fi.Size()
		}
	}
	// The schema: what each object is and the table it belongs to.
	kinds := map[string][2]string{"sqlite_schema": {"table", "sqlite_schema"}}
	roots := map[uint32]string{1: "sqlite_schema"}
	rows, err := db.QueryContext(ctx, `SELECT name, type, tbl_name, rootpage FROM sqlite_schema WHERE rootpage > 0`)
	if err != nil {
		return u, err
	}
	for rows.Next() {
		var name, typ, table string
		var root uint32
		if err := rows.Scan(&name, &typ, &table, &root); err != nil {
			_ = rows.Close()
			return u, err
		}
		kinds[name] = [2]string{typ, table}
		roots[root] = name
	}
	if err := rows.Close(); err != nil {
		return u, err
	}

	walked, err := walkBtrees(path, roots)
	if err != nil {
		return u, fmt.Errorf("walk %s: %w", path, err)
	}
	var pages map[string]int64
	pages, u.source = walked, "a walk of the file's b-trees (build with -tags sqlite_dbstat to read and check them against dbstat)"
	if stat, err := dbstatPages(ctx, db); err == nil {
		for name, n := range stat {
			if walked[name] != n {
				return u, fmt.Errorf("dbstat has %d bytes in %s, the walk of the file %d", n, name, walked[name])
			}
		}
		pages, u.source = stat, "dbstat (the same as a walk of the file's b-trees)"
	} else if !strings.Contains(err.Error(), "no such table") {
		return u, fmt.Errorf("dbstat: %w", err)
	}
	for name, n := range pages {
		o := diskObject{name: name, typ: kinds[name][0], table: kinds[name][1], bytes: n}
		if o.typ == "table" {
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM "`+name+`"`).Scan(&o.rows); err != nil {
				return u, err
			}
		}
		u.objects = append(u.objects, o)
	}
	sortObjects(u.objects)
	u.columns = map[string][]diskColumn{}
	for _, o := range u.objects {
		if o.typ != "table" || o.rows == 0 || o.name == "sqlite_schema" {
			continue
		}
		cols, err := columnBytes(ctx, db, o.name)
		if err != nil {
			return u, err
		}
		u.columns[o.name] = cols
	}
	return u, nil
}

// sortObjects orders objects largest first, then by name.
func sortObjects(objects []diskObject) {
	slices.SortFunc(objects, func(a, b diskObject) int {
		if a.bytes != b.bytes {
			return int(b.bytes - a.bytes)
		}
		return strings.Compare(a.name, b.name)
	})
}

// dbstatPages is the bytes of each object's pages from the dbstat virtual table, which
// mattn/go-sqlite3 compiles in only with the build tag sqlite_dbstat.
func dbstatPages(ctx context.Context, db *sql.DB) (map[string]int64, error) {
	rows, err := db.QueryContext(ctx, `SELECT name, sum(pgsize) FROM dbstat GROUP BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return nil, err
		}
		out[name] = n
	}
	return out, rows.Err()
}

// walkBtrees counts the pages of each b-tree of the SQLite file at path, from its root page
// (roots: root page → object name), with the overflow pages of its cells, as dbstat does:
// the bytes of each object's pages. It reads the file format directly
// (https://www.sqlite.org/fileformat2.html#b_tree_pages); the database must be checkpointed.
func walkBtrees(path string, roots map[uint32]string) (map[string]int64, error) {
	file, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(file) < 100 || string(file[:16]) != "SQLite format 3\x00" {
		return nil, errors.New("not an SQLite database")
	}
	pageSize := int(binary.BigEndian.Uint16(file[16:]))
	if pageSize == 1 {
		pageSize = 65536
	}
	usable := pageSize - int(file[20])
	page := func(n uint32) ([]byte, error) {
		if n == 0 || int(n)*pageSize > len(file) {
			return nil, fmt.Errorf("page %d out of the file", n)
		}
		return file[int(n-1)*pageSize : int(n)*pageSize], nil
	}
	// overflowPages is how many overflow pages a payload of p bytes needs in a cell of a
	// table leaf (table) or an index page.
	overflowPages := func(p int, table bool) int {
		maxLocal := (usable-12)*64/255 - 23
		if table {
			maxLocal = usable - 35
		}
		if p <= maxLocal {
			return 0
		}
		minLocal := (usable-12)*32/255 - 23
		local := minLocal + (p-minLocal)%(usable-4)
		if local > maxLocal {
			local = minLocal
		}
		return (p - local + usable - 5) / (usable - 4)
	}
	out := map[string]int64{}
	for root, name := range roots {
		stack := []uint32{root}
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			pg, err := page(n)
			if err != nil {
				return nil, err
			}
			out[name] += int64(pageSize)
			hdr := 0
			if n == 1 {
				hdr = 100
			}
			typ := pg[hdr]
			cells := int(binary.BigEndian.Uint16(pg[hdr+3:]))
			ptrs := hdr + 8
			interior := typ == 0x02 || typ == 0x05
			if interior {
				stack = append(stack, binary.BigEndian.Uint32(pg[hdr+8:]))
				ptrs = hdr + 12
			} else if typ != 0x0a && typ != 0x0d {
				return nil, fmt.Errorf("page %d of %s: not a b-tree page (type %#x)", n, name, typ)
			}
			for i := range cells {
				c := int(binary.BigEndian.Uint16(pg[ptrs+2*i:]))
				if interior {
					stack = append(stack, binary.BigEndian.Uint32(pg[c:]))
					c += 4
				}
				if typ == 0x05 { // table interior: a rowid, no payload
					continue
				}
				p, _ := sqliteVarint(pg[c:])
				out[name] += int64(overflowPages(int(p), typ == 0x0d) * pageSize)
			}
		}
	}
	return out, nil
}

// sqliteVarint decodes SQLite's big-endian varint (at most 9 bytes) and its length.
func sqliteVarint(b []byte) (uint64, int) {
	var v uint64
	for i := range 8 {
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return v<<8 | uint64(b[8]), 9
}

// columnBytes estimates, per column of table, the bytes its values take in SQLite's record
// format (integers 0 to 8 bytes by magnitude, reals 8, text and blobs their length) plus the
// serial type in the record header (1 byte, 2 for text or blobs over 57 bytes, 3 over 8,185):
// what each column costs the table's rows, before the b-tree's own overhead. An INTEGER
// PRIMARY KEY is counted as its value, which SQLite keeps as the cell's rowid instead.
func columnBytes(ctx context.Context, db *sql.DB, table string) ([]diskColumn, error) {
	names, err := queryStrings(ctx, db, `SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return nil, err
	}
	return sumColumns(ctx, db, table, names, func(c string) string {
		return `coalesce(sum(CASE typeof(` + c + `)
			WHEN 'null' THEN 1
			WHEN 'real' THEN 9
			WHEN 'integer' THEN 1 + CASE
				WHEN ` + c + ` IN (0, 1) THEN 0
				WHEN ` + c + ` BETWEEN -128 AND 127 THEN 1
				WHEN ` + c + ` BETWEEN -32768 AND 32767 THEN 2
				WHEN ` + c + ` BETWEEN -8388608 AND 8388607 THEN 3
				WHEN ` + c + ` BETWEEN -2147483648 AND 2147483647 THEN 4
				WHEN ` + c + ` BETWEEN -140737488355328 AND 140737488355327 THEN 6
				ELSE 8 END
			ELSE length(CAST(` + c + ` AS BLOB)) + CASE
				WHEN length(CAST(` + c + ` AS BLOB)) <= 57 THEN 1
				WHEN length(CAST(` + c + ` AS BLOB)) <= 8185 THEN 2
				ELSE 3 END
			END), 0)`
	})
}

// queryStrings is the one text column of the rows of query.
func queryStrings(ctx context.Context, db *sql.DB, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// sumColumns runs sum(column) for every column of table in one scan (sum makes the SQL of a
// quoted column name's total) and returns the totals, largest first.
func sumColumns(ctx context.Context, db *sql.DB, table string, names []string, sum func(column string) string) ([]diskColumn, error) {
	sums := make([]string, len(names))
	for i, name := range names {
		sums[i] = sum(`"` + name + `"`)
	}
	vals := make([]int64, len(names))
	dest := make([]any, len(names))
	for i := range vals {
		dest[i] = &vals[i]
	}
	if err := db.QueryRowContext(ctx, `SELECT `+strings.Join(sums, ", ")+` FROM "`+table+`"`).Scan(dest...); err != nil {
		return nil, fmt.Errorf("column sizes of %s: %w", table, err)
	}
	out := make([]diskColumn, len(names))
	for i, name := range names {
		out[i] = diskColumn{name: name, bytes: vals[i]}
	}
	slices.SortStableFunc(out, func(a, b diskColumn) int { return int(b.bytes - a.bytes) })
	return out, nil
}

// table is the breakdown as text: each object's bytes per callback, then each table's columns.
func (u diskUsage) table(n int) string {
	var s strings.Builder
	per := func(v int64) float64 { return float64(v) / float64(n) }
	fmt.Fprintf(&s, "\n%-36s %-6s %-18s %8s %12s %10s %7s %7s\n", "object", "type", "table", "rows", "bytes", "B/callback", "share", "B/row")
	var sum int64
	for _, o := range u.objects {
		sum += o.bytes
		rows, perRow := "", ""
		if o.typ == "table" {
			rows = fmt.Sprint(o.rows)
			if o.rows > 0 {
				perRow = fmt.Sprintf("%.0f", float64(o.bytes)/float64(o.rows))
			}
		}
		fmt.Fprintf(&s, "%-36s %-6s %-18s %8s %12d %10.1f %6.1f%% %7s\n", o.name, o.typ, o.table, rows, o.bytes, per(o.bytes),
			100*float64(o.bytes)/float64(u.fileBytes), perRow)
	}
	if other := u.fileBytes - sum - u.freeBytes; u.freeBytes != 0 || other != 0 {
		fmt.Fprintf(&s, "%-36s %-6s %-18s %8s %12d %10.1f\n", "(free pages)", "", "", "", u.freeBytes, per(u.freeBytes))
		fmt.Fprintf(&s, "%-36s %-6s %-18s %8s %12d %10.1f\n", "(pointer-map and lock pages)", "", "", "", other, per(other))
	}
	fmt.Fprintf(&s, "%-36s %-6s %-18s %8s %12d %10.1f\n", "total", "", "", "", u.fileBytes, per(u.fileBytes))
	for _, o := range u.objects {
		cols := u.columns[o.name]
		if len(cols) == 0 {
			continue
		}
		fmt.Fprintf(&s, "\n%s: %d rows, %.0f B/row on disk; B/row of each column's values:\n", o.name, o.rows, float64(o.bytes)/float64(o.rows))
		var total int64
		for _, c := range cols {
			total += c.bytes
		}
		for _, c := range cols {
			if c.bytes == 0 {
				continue
			}
			fmt.Fprintf(&s, "  %-18s %8.1f %6.1f%%\n", c.name, float64(c.bytes)/float64(o.rows), 100*float64(c.bytes)/float64(total))
		}
		fmt.Fprintf(&s, "  %-18s %8.1f\n", "(all columns)", float64(total)/float64(o.rows))
	}
	return s.String()
}

// measurePostgres reads the size of each table (pg_table_size: heap, TOAST, free space and
// visibility maps) and index (pg_relation_size) of db's schema (its search_path) and, per
// table, each column's bytes (pg_column_size). No VACUUM runs first: the dead versions of
// updated rows are on disk until autovacuum makes their space reusable.
func measurePostgres(db *sql.DB) (diskUsage, error) {
	ctx := context.Background()
	u := diskUsage{what: "the schema's tables and indexes (pg_table_size, pg_relation_size)", source: "pg_table_size and pg_relation_size",
		columns: map[string][]diskColumn{}}
	rows, err := db.QueryContext(ctx, `SELECT c.relname, CASE c.relkind WHEN 'r' THEN 'table' ELSE 'index' END, coalesce(t.relname, c.relname),
			CASE c.relkind WHEN 'r' THEN pg_table_size(c.oid) ELSE pg_relation_size(c.oid) END
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_index i ON i.indexrelid = c.oid LEFT JOIN pg_class t ON t.oid = i.indrelid
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i')`)
	if err != nil {
		return u, err
	}
	for rows.Next() {
		var o diskObject
		if err := rows.Scan(&o.name, &o.typ, &o.table, &o.bytes); err != nil {
			_ = rows.Close()
			return u, err
		}
		u.fileBytes += o.bytes
		u.objects = append(u.objects, o)
	}
	if err := rows.Close(); err != nil {
		return u, err
	}
	for i := range u.objects {
		o := &u.objects[i]
		if o.typ != "table" {
			continue
		}
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM "`+o.name+`"`).Scan(&o.rows); err != nil {
			return u, err
		}
		if o.rows == 0 {
			continue
		}
		names, err := queryStrings(ctx, db, `SELECT column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, o.name)
		if err != nil {
			return u, err
		}
		cols, err := sumColumns(ctx, db, o.name, names, func(c string) string { return `coalesce(sum(pg_column_size(` + c + `)), 0)` })
		if err != nil {
			return u, err
		}
		u.columns[o.name] = cols
	}
	sortObjects(u.objects)
	return u, nil
}
