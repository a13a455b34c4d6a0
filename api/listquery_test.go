package api

import (
	"encoding/json"
	"net/url"
	"reflect"
	"testing"
	"time"
)

func TestListQueryValidate(t *testing.T) {
	cases := []struct {
		name string
		q    ListQuery
		live bool
		want []string
	}{
		{"empty", ListQuery{}, false, nil},
		{"full valid", ListQuery{Offset: Int(0), Limit: Int(100), Date: "2024-02-29", BeforeDate: "2024-03-01T00:00:00Z",
			AfterDate: "2024-02-01", Status: []JobStatus{"queued", "processing", "done", "error"}, Kind: []JobKind{"pre-recorded", "live"},
			CustomMetadata: json.RawMessage(`{"user":"a"}`)}, false, nil},
		{"limit 1", ListQuery{Limit: Int(1)}, true, nil},
		{"offset negative", ListQuery{Offset: Int(-1)}, false, []string{"offset must be at least 0 (got -1)"}},
		{"limit zero", ListQuery{Limit: Int(0)}, false, []string{"limit must be between 1 and 100 (got 0)"}},
		{"limit over max", ListQuery{Limit: Int(101)}, false, []string{"limit must be between 1 and 100 (got 101)"}},
		{"date bad month", ListQuery{Date: "2024-13-01"}, false, []string{`date must be a date in YYYY-MM-DD form (got "2024-13-01")`}},
		{"date short", ListQuery{Date: "2024-1-1"}, false, []string{`date must be a date in YYYY-MM-DD form (got "2024-1-1")`}},
		{"date with time", ListQuery{Date: "2024-01-01T00:00:00Z"}, false, []string{`date must be a date in YYYY-MM-DD form (got "2024-01-01T00:00:00Z")`}},
		{"before_date bad", ListQuery{BeforeDate: "yesterday"}, false, []string{`before_date must be an ISO 8601 date-time (got "yesterday")`}},
		{"after_date bad", ListQuery{AfterDate: "01/02/2024"}, false, []string{`after_date must be an ISO 8601 date-time (got "01/02/2024")`}},
		{"range reversed", ListQuery{AfterDate: "2024-03-02T00:00:00Z", BeforeDate: "2024-03-01T00:00:00Z"}, false,
			[]string{`after_date must be earlier than before_date (got "2024-03-02T00:00:00Z" and "2024-03-01T00:00:00Z")`}},
		{"range empty", ListQuery{AfterDate: "2024-03-01T01:00:00+01:00", BeforeDate: "2024-03-01T00:00:00Z"}, false,
			[]string{`after_date must be earlier than before_date (got "2024-03-01T01:00:00+01:00" and "2024-03-01T00:00:00Z")`}},
		{"range valid across zones", ListQuery{AfterDate: "2024-03-01T00:30:00+01:00", BeforeDate: "2024-03-01T00:00:00Z"}, false, nil},
		{"status unknown", ListQuery{Status: []JobStatus{"done", "finished"}}, false,
			[]string{`status must be one of queued, processing, done, error (got "finished")`}},
		{"kind unknown", ListQuery{Kind: []JobKind{"batch"}}, false, []string{`kind must be one of pre-recorded, live (got "batch")`}},
		{"kind on live list", ListQuery{Kind: []JobKind{"live"}}, true, []string{"kind is not allowed on the live list"}},
		{"metadata array", ListQuery{CustomMetadata: json.RawMessage(`[1]`)}, false, []string{"custom_metadata must be a JSON object (got array)"}},
		{"all at once", ListQuery{Offset: Int(-5), Limit: Int(500), Date: "x", BeforeDate: "y", AfterDate: "z",
			Status: []JobStatus{"s"}, Kind: []JobKind{"k"}, CustomMetadata: json.RawMessage(`true`)}, false,
			[]string{
				"offset must be at least 0 (got -5)",
				"limit must be between 1 and 100 (got 500)",
				`date must be a date in YYYY-MM-DD form (got "x")`,
				`before_date must be an ISO 8601 date-time (got "y")`,
				`after_date must be an ISO 8601 date-time (got "z")`,
				`status must be one of queued, processing, done, error (got "s")`,
				`kind must be one of pre-recorded, live (got "k")`,
				"custom_metadata must be a JSON object (got boolean)",
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := sentencesOf(t, tc.q.Validate(tc.live))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestParseListQuery(t *testing.T) {
	cases := []struct {
		name    string
		query   string
		live    bool
		want    ListQuery
		wantErr []string
	}{
		{"empty", "", false, ListQuery{}, nil},
		{"numbers", "offset=40&limit=20", false, ListQuery{Offset: Int(40), Limit: Int(20)}, nil},
		{"empty values are absent", "offset=&limit=&status=&date=", false, ListQuery{}, nil},
		{"repeated and comma lists", "status=done,error&status=queued&status=%20processing%20,", false,
			ListQuery{Status: []JobStatus{"done", "error", "queued", "processing"}}, nil},
		{"kinds", "kind=live,pre-recorded", false, ListQuery{Kind: []JobKind{"live", "pre-recorded"}}, nil},
		{"dates", "date=2024-03-01&before_date=2024-03-02T00:00:00.000Z&after_date=2024-02-01", false,
			ListQuery{Date: "2024-03-01", BeforeDate: "2024-03-02T00:00:00.000Z", AfterDate: "2024-02-01"}, nil},
		{"metadata compacted", "custom_metadata=" + url.QueryEscape(`{ "user" : "a", "n": [1, 2] }`), false,
			ListQuery{CustomMetadata: json.RawMessage(`{"user":"a","n":[1,2]}`)}, nil},
		{"unknown parameters ignored", "page=3&offset=1", false, ListQuery{Offset: Int(1)}, nil},
		{"offset not a number", "offset=abc", false, ListQuery{}, []string{`offset must be an integer (got "abc")`}},
		{"limit fraction", "limit=1.5", false, ListQuery{}, []string{`limit must be an integer (got "1.5")`}},
		{"limit overflow", "limit=99999999999999999999", false, ListQuery{},
			[]string{`limit must be an integer (got "99999999999999999999")`}},
		{"offset twice", "offset=1&offset=2", false, ListQuery{}, []string{"offset must be given at most once (got 2 values)"}},
		{"limit zero", "limit=0", false, ListQuery{Limit: Int(0)}, []string{"limit must be between 1 and 100 (got 0)"}},
		{"kind on live", "kind=live", true, ListQuery{Kind: []JobKind{"live"}}, []string{"kind is not allowed on the live list"}},
		{"metadata invalid", "custom_metadata=%7Bbad", false, ListQuery{}, []string{`custom_metadata must be a JSON object (got "{bad")`}},
		{"metadata not object", "custom_metadata=%5B1%5D", false, ListQuery{CustomMetadata: json.RawMessage(`[1]`)},
			[]string{"custom_metadata must be a JSON object (got array)"}},
		{"all errors ordered by parameter", "custom_metadata=x&status=nope&limit=a&offset=-1&date=2024/01/01", false,
			ListQuery{Offset: Int(-1), Date: "2024/01/01", Status: []JobStatus{"nope"}},
			[]string{
				"offset must be at least 0 (got -1)",
				`limit must be an integer (got "a")`,
				`date must be a date in YYYY-MM-DD form (got "2024/01/01")`,
				`status must be one of queued, processing, done, error (got "nope")`,
				`custom_metadata must be a JSON object (got "x")`,
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			q, err := ParseListQuery(v, tc.live)
			if got := sentencesOf(t, err); !reflect.DeepEqual(got, tc.wantErr) {
				t.Errorf("errors %q\nwant   %q", got, tc.wantErr)
			}
			if !reflect.DeepEqual(q, tc.want) {
				t.Errorf("query %+v\nwant  %+v", q, tc.want)
			}
		})
	}
}

func TestListQueryValuesRoundTrip(t *testing.T) {
	cases := []struct {
		q       ListQuery
		live    bool
		encoded string
	}{
		{ListQuery{}, false, ""},
		{ListQuery{Offset: Int(0), Limit: Int(20)}, true, "limit=20&offset=0"},
		{ListQuery{Offset: Int(20), Limit: Int(10), Date: "2024-03-01", BeforeDate: "2024-03-02T00:00:00.000Z",
			AfterDate: "2024-02-01T00:00:00+01:00", Status: []JobStatus{"error", "done"}, Kind: []JobKind{"live"},
			CustomMetadata: json.RawMessage(`{"user":"a b","n":1}`)}, false,
			"after_date=2024-02-01T00%3A00%3A00%2B01%3A00&before_date=2024-03-02T00%3A00%3A00.000Z" +
				"&custom_metadata=%7B%22user%22%3A%22a+b%22%2C%22n%22%3A1%7D&date=2024-03-01&kind=live&limit=10&offset=20" +
				"&status=error&status=done"},
	}
	for _, tc := range cases {
		v := tc.q.Values()
		if got := v.Encode(); got != tc.encoded {
			t.Errorf("Values().Encode()\n got %s\nwant %s", got, tc.encoded)
		}
		back, err := ParseListQuery(v, tc.live)
		if err != nil {
			t.Errorf("ParseListQuery(%s): %v", v.Encode(), err)
		}
		if !reflect.DeepEqual(back, tc.q) {
			t.Errorf("round trip\n got %+v\nwant %+v", back, tc.q)
		}
	}
}

func TestListQueryEffective(t *testing.T) {
	var q ListQuery
	if q.EffectiveOffset() != 0 || q.EffectiveLimit() != 20 {
		t.Errorf("defaults %d %d", q.EffectiveOffset(), q.EffectiveLimit())
	}
	q = ListQuery{Offset: Int(7), Limit: Int(3)}
	if q.EffectiveOffset() != 7 || q.EffectiveLimit() != 3 {
		t.Errorf("set %d %d", q.EffectiveOffset(), q.EffectiveLimit())
	}
}

func TestListQueryMatches(t *testing.T) {
	job := &Job{
		ID: "j", Status: StatusDone, Kind: KindPreRecorded,
		CreatedAt:      NewTime(time.Date(2024, 3, 1, 23, 30, 0, 0, time.UTC)),
		CustomMetadata: json.RawMessage(`{"user":"a","n":1.0,"big":12345678901234567890,"tags":["x","y"],"o":{"k":true}}`),
	}
	cases := []struct {
		name string
		q    ListQuery
		want bool
	}{
		{"no filter", ListQuery{}, true},
		{"paging ignored", ListQuery{Offset: Int(5), Limit: Int(1)}, true},
		{"status in", ListQuery{Status: []JobStatus{"error", "done"}}, true},
		{"status out", ListQuery{Status: []JobStatus{"queued"}}, false},
		{"kind in", ListQuery{Kind: []JobKind{"pre-recorded"}}, true},
		{"kind out", ListQuery{Kind: []JobKind{"live"}}, false},
		{"date same UTC day", ListQuery{Date: "2024-03-01"}, true},
		{"date other day", ListQuery{Date: "2024-03-02"}, false},
		{"before later", ListQuery{BeforeDate: "2024-03-02"}, true},
		{"before exact is exclusive", ListQuery{BeforeDate: "2024-03-01T23:30:00Z"}, false},
		{"after earlier in other zone", ListQuery{AfterDate: "2024-03-02T00:00:00+01:00"}, true},
		{"after later", ListQuery{AfterDate: "2024-03-02"}, false},
		{"metadata subset", ListQuery{CustomMetadata: json.RawMessage(`{"user":"a"}`)}, true},
		{"metadata number forms", ListQuery{CustomMetadata: json.RawMessage(`{"n":1}`)}, true},
		{"metadata big number exact", ListQuery{CustomMetadata: json.RawMessage(`{"big":12345678901234567890}`)}, true},
		{"metadata big number off by one", ListQuery{CustomMetadata: json.RawMessage(`{"big":12345678901234567891}`)}, false},
		{"metadata nested", ListQuery{CustomMetadata: json.RawMessage(`{"tags":["x","y"],"o":{"k":true}}`)}, true},
		{"metadata nested object subset", ListQuery{CustomMetadata: json.RawMessage(`{"o":{}}`)}, true},
		{"metadata nested object differs", ListQuery{CustomMetadata: json.RawMessage(`{"o":{"k":false}}`)}, false},
		{"metadata nested object where scalar", ListQuery{CustomMetadata: json.RawMessage(`{"user":{"a":1}}`)}, false},
		{"metadata array order", ListQuery{CustomMetadata: json.RawMessage(`{"tags":["y","x"]}`)}, false},
		{"metadata value differs", ListQuery{CustomMetadata: json.RawMessage(`{"user":"b"}`)}, false},
		{"metadata key missing", ListQuery{CustomMetadata: json.RawMessage(`{"team":"a"}`)}, false},
		{"metadata empty filter", ListQuery{CustomMetadata: json.RawMessage(`{}`)}, true},
	}
	for _, tc := range cases {
		if got := tc.q.Matches(job); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
	noMeta := &Job{Status: StatusDone, CreatedAt: job.CreatedAt}
	if (ListQuery{CustomMetadata: json.RawMessage(`{"user":"a"}`)}).Matches(noMeta) {
		t.Error("a job without metadata matches a metadata filter")
	}
}
