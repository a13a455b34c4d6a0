package sqlcore

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
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

// scanValues is a Scanner over one row's values, assigned as database/sql would.
type scanValues []any

func (v scanValues) Scan(dest ...any) error {
	for i, d := range dest {
		switch p := d.(type) {
		case *int64:
			*p = v[i].(int64)
		case *int:
			*p = v[i].(int)
		case *string:
			switch s := v[i].(type) {
			case string:
				*p = s
			case []byte:
				*p = string(s)
			}
		case interface{ Scan(any) error }:
			if err := p.Scan(v[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// A sink delivery's event, decoded with its data in place, must equal what json.Unmarshal
// gives, whichever way the driver hands the text (SQLite: string, PostgreSQL: bytes).
func TestScanSinkDeliveryEvent(t *testing.T) {
	for _, ev := range []string{
		`{"id":"e1","type":"job.completed","created_at":"2026-11-22T01:39:00.123Z","job_id":"j1","kind":"pre_recorded","data":{"a":[1,2,{"b":"<&>"}]}}`,
		`{"id":"e2","type":"t","created_at":"2026-11-22T01:39:00Z","job_id":"j2","kind":"live","category":"final","custom_metadata":{"k":"v"},"data":null}`,
		`{"id":"e3","type":"t","created_at":"2026-11-22T01:39:00Z","job_id":"j3","kind":"live"}`,
		`{"id":"e4","type":"t","created_at":"2026-11-22T01:39:00Z","job_id":"j4","kind":"live","data":"text"}`,
	} {
		var want api.Event
		if err := json.Unmarshal([]byte(ev), &want); err != nil {
			t.Fatal(err)
		}
		for _, src := range []any{ev, []byte(ev)} {
			d, err := ScanSinkDelivery(scanValues{int64(1), "s", "e", src, nil, "", 0, nil, "", nil, nil, nil, nil})
			if err != nil {
				t.Fatalf("%T %s: %v", src, ev, err)
			}
			if !reflect.DeepEqual(d.Event, want) {
				t.Errorf("%T: event %+v, want %+v", src, d.Event, want)
			}
			if d.Event.Data != nil && cap(d.Event.Data) != len(d.Event.Data) {
				t.Errorf("%T: data's capacity %d exceeds its length %d: an append would write into the text", src, cap(d.Event.Data), len(d.Event.Data))
			}
		}
	}
	if _, err := ScanSinkDelivery(scanValues{int64(1), "s", "e", `{"data":`, nil, "", 0, nil, "", nil, nil, nil, nil}); err == nil {
		t.Error("a truncated event decoded")
	}
	// An event stored without its data takes the live message of its inbox row, byte for byte.
	message := []byte("{ \"type\" : \"transcript\",\n \"n\":1 }")
	d, err := ScanSinkDelivery(scanValues{int64(1), "s", "e",
		`{"id":"e5","type":"live.transcript","created_at":"2026-11-22T01:39:00Z","job_id":"j5","kind":"live","data":null}`,
		message, "", 0, nil, "", nil, nil, nil, nil})
	if err != nil || d.Event.ID != "e5" || !bytes.Equal(d.Event.Data, message) {
		t.Errorf("event by reference: %+v (data %q), %v", d.Event, d.Event.Data, err)
	}
	// The trace context of the apply that queued it: NULL (tracing off) reads as empty.
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	d, err = ScanSinkDelivery(scanValues{int64(1), "s", "e", `{"id":"e6"}`, nil, "", 0, nil, "", nil, nil, parent, "k=v"})
	if err != nil || d.TraceParent != parent || d.TraceState != "k=v" {
		t.Errorf("trace context: %q %q, %v", d.TraceParent, d.TraceState, err)
	}
}

func TestIDList(t *testing.T) {
	for _, tc := range []struct {
		ids  []int64
		want string
	}{
		{nil, "[]"},
		{[]int64{7}, "[7]"},
		{[]int64{1, 9223372036854775807, -2}, "[1,9223372036854775807,-2]"},
	} {
		if got := IDList(tc.ids); got != tc.want {
			t.Errorf("IDList(%v) = %s, want %s", tc.ids, got, tc.want)
		}
	}
}
