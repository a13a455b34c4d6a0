package sqlcore

import (
	"testing"
	"time"
)

// Time must read both stores' columns as their own code did: SQLite's text, PostgreSQL's
// time.Time, NULL and the zero time as "not yet".
func TestTimeScan(t *testing.T) {
	at := time.Date(2026, 11, 22, 1, 39, 0, 123456789, time.UTC)
	cases := []struct {
		src  any
		want time.Time
	}{
		{nil, time.Time{}},
		{"", time.Time{}},
		{"0001-01-01T00:00:00.000000000Z", time.Time{}},
		{"2026-11-22T01:39:00.123456789Z", at},
		{[]byte("2026-11-22T01:39:00.123456789Z"), at},
		{at, at},
	}
	for _, c := range cases {
		var got Time
		if err := got.Scan(c.src); err != nil || !got.T.Equal(c.want) || got.T.IsZero() != c.want.IsZero() {
			t.Errorf("Scan(%v) = %v, %v; want %v", c.src, got.T, err, c.want)
		}
	}
	var bad Time
	if err := bad.Scan("yesterday"); err == nil {
		t.Error("Scan of text that is no time succeeded")
	}
}

func TestRebind(t *testing.T) {
	q := `SELECT 1 FROM t WHERE a = ? AND b > ? LIMIT ?`
	if got := (Dialect{}).Rebind(q); got != q {
		t.Errorf("SQLite's Rebind changed the query: %s", got)
	}
	if got, want := (Dialect{Numbered: true}).Rebind(q), `SELECT 1 FROM t WHERE a = $1 AND b > $2 LIMIT $3`; got != want {
		t.Errorf("Rebind = %s, want %s", got, want)
	}
	// ?N keeps its number: a value used twice.
	q = `UPDATE t SET a = ?1 WHERE b <= ?2 AND c < ?2 LIMIT ?10`
	if got, want := (Dialect{Numbered: true}).Rebind(q), `UPDATE t SET a = $1 WHERE b <= $2 AND c < $2 LIMIT $10`; got != want {
		t.Errorf("Rebind = %s, want %s", got, want)
	}
}
