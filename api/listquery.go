package api

import (
	"bytes"
	"encoding/json"
	"math/big"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DateLayout is the form of the date list filter.
const DateLayout = "2006-01-02"

// listFields orders the violations of a list query the way the parameters are documented.
var listFields = [...]string{"offset", "limit", "date", "before_date", "after_date", "status", "kind", "custom_metadata"}

func listFieldRank(field string) int {
	if i := slices.Index(listFields[:], field); i >= 0 {
		return i
	}
	return len(listFields)
}

// Validate checks the query against §4.4 (live false) or §4.5 (live true) and returns every
// violation as ValidationErrors, or nil. limit is capped at MaxListLimit, a bound the interface
// leaves open.
func (q *ListQuery) Validate(live bool) error {
	var c checker
	atLeast(&c, "offset", q.Offset, 0)
	between(&c, "limit", q.Limit, 1, MaxListLimit)
	if q.Date != "" {
		if _, err := time.Parse(DateLayout, q.Date); err != nil {
			c.add("date", "must be a date in YYYY-MM-DD form (got %s)", quote(q.Date))
		}
	}
	before, beforeOK := c.listTime("before_date", q.BeforeDate)
	after, afterOK := c.listTime("after_date", q.AfterDate)
	if beforeOK && afterOK && !after.Before(before) {
		c.add("after_date", "must be earlier than before_date (got %s and %s)", quote(q.AfterDate), quote(q.BeforeDate))
	}
	for _, s := range q.Status {
		if !s.Valid() {
			c.add("status", "must be one of queued, processing, done, error (got %s)", quote(string(s)))
		}
	}
	switch {
	case live && len(q.Kind) > 0:
		c.add("kind", "is not allowed on the live list")
	default:
		for _, k := range q.Kind {
			if !k.Valid() {
				c.add("kind", "must be one of pre-recorded, live (got %s)", quote(string(k)))
			}
		}
	}
	c.metadata("custom_metadata", q.CustomMetadata)
	return c.err()
}

func (c *checker) listTime(field, s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	t, err := ParseTime(s)
	if err != nil {
		c.add(field, "must be an ISO 8601 date-time (got %s)", quote(s))
		return time.Time{}, false
	}
	return t, true
}

// ParseListQuery reads the query string of a list endpoint. It returns every violation as
// ValidationErrors, including numbers that do not parse, and the query as far as it could be
// read. status and kind accept repeated parameters, comma-separated lists, or both. A parameter
// with an empty value counts as absent, because forms send empty fields; unknown parameters are
// ignored, as the service does not document rejecting them.
func ParseListQuery(v url.Values, live bool) (ListQuery, error) {
	var q ListQuery
	var c checker
	q.Offset = c.queryInt(v, "offset")
	q.Limit = c.queryInt(v, "limit")
	q.Date = c.queryString(v, "date")
	q.BeforeDate = c.queryString(v, "before_date")
	q.AfterDate = c.queryString(v, "after_date")
	for _, s := range queryList(v["status"]) {
		q.Status = append(q.Status, JobStatus(s))
	}
	for _, s := range queryList(v["kind"]) {
		q.Kind = append(q.Kind, JobKind(s))
	}
	if s := c.queryString(v, "custom_metadata"); s != "" {
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(s)); err != nil {
			c.add("custom_metadata", "must be a JSON object (got %s)", quote(s))
		} else {
			q.CustomMetadata = buf.Bytes()
		}
	}
	if err := q.Validate(live); err != nil {
		c.errs = append(c.errs, err.(ValidationErrors)...)
	}
	slices.SortStableFunc(c.errs, func(a, b FieldError) int {
		return listFieldRank(a.Field) - listFieldRank(b.Field)
	})
	return q, c.err()
}

// queryValue returns the one non-empty value of a scalar parameter.
func (c *checker) queryValue(v url.Values, key string) (string, bool) {
	var vals []string
	for _, s := range v[key] {
		if s != "" {
			vals = append(vals, s)
		}
	}
	switch len(vals) {
	case 0:
		return "", false
	case 1:
		return vals[0], true
	}
	c.add(key, "must be given at most once (got %d values)", len(vals))
	return "", false
}

func (c *checker) queryString(v url.Values, key string) string {
	s, _ := c.queryValue(v, key)
	return s
}

func (c *checker) queryInt(v url.Values, key string) *int {
	s, ok := c.queryValue(v, key)
	if !ok {
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		c.add(key, "must be an integer (got %s)", quote(s))
		return nil
	}
	return &n
}

// queryList splits repeated and comma-separated values, dropping empty items.
func queryList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for item := range strings.SplitSeq(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}

// Values encodes the query for a URL: the inverse of ParseListQuery. Lists become repeated
// parameters in their order; url.Values.Encode sorts the keys, so page URLs are stable.
func (q ListQuery) Values() url.Values {
	v := url.Values{}
	if q.Offset != nil {
		v.Set("offset", strconv.Itoa(*q.Offset))
	}
	if q.Limit != nil {
		v.Set("limit", strconv.Itoa(*q.Limit))
	}
	for key, s := range map[string]string{"date": q.Date, "before_date": q.BeforeDate, "after_date": q.AfterDate} {
		if s != "" {
			v.Set(key, s)
		}
	}
	for _, s := range q.Status {
		v.Add("status", string(s))
	}
	for _, k := range q.Kind {
		v.Add("kind", string(k))
	}
	if m := bytes.TrimSpace(q.CustomMetadata); len(m) > 0 && string(m) != "null" {
		v.Set("custom_metadata", string(m))
	}
	return v
}

// EffectiveOffset is the offset, or 0 when absent.
func (q ListQuery) EffectiveOffset() int {
	if q.Offset == nil {
		return 0
	}
	return *q.Offset
}

// EffectiveLimit is the limit, or DefaultListLimit when absent.
func (q ListQuery) EffectiveLimit() int {
	if q.Limit == nil {
		return DefaultListLimit
	}
	return *q.Limit
}

// Matches reports whether a job passes the filters of a validated query (offset and limit
// aside): status and kind are any-of lists; date is the UTC day of created_at; before_date and
// after_date are exclusive bounds on created_at; custom_metadata matches when every member it
// names is present in the job's custom_metadata with an equal JSON value.
func (q ListQuery) Matches(j *Job) bool {
	if len(q.Status) > 0 && !slices.Contains(q.Status, j.Status) {
		return false
	}
	if len(q.Kind) > 0 && !slices.Contains(q.Kind, j.Kind) {
		return false
	}
	created := j.CreatedAt.UTC()
	if q.Date != "" && created.Format(DateLayout) != q.Date {
		return false
	}
	if t, err := ParseTime(q.BeforeDate); q.BeforeDate != "" && err == nil && !created.Before(t) {
		return false
	}
	if t, err := ParseTime(q.AfterDate); q.AfterDate != "" && err == nil && !created.After(t) {
		return false
	}
	return metadataContains(j.CustomMetadata, q.CustomMetadata)
}

// metadataContains reports whether the filter object is a subset of the metadata object: every
// member present with an equal value, and a member that is an object in both matched the same
// way, so {"tags":{"team":"a"}} finds {"tags":{"team":"a","env":"prod"}}. Arrays and scalars
// compare exactly. An absent or empty filter matches everything.
func metadataContains(metadata, filter json.RawMessage) bool {
	want, ok := decodeObject(filter)
	if !ok || len(want) == 0 {
		return true
	}
	have, ok := decodeObject(metadata)
	return ok && subsetOf(want, have)
}

func subsetOf(want, have map[string]any) bool {
	for k, w := range want {
		h, present := have[k]
		if !present {
			return false
		}
		wm, wIsObject := w.(map[string]any)
		hm, hIsObject := h.(map[string]any)
		if wIsObject && hIsObject {
			if !subsetOf(wm, hm) {
				return false
			}
			continue
		}
		if !jsonEqual(h, w) {
			return false
		}
	}
	return true
}

// decodeObject decodes a JSON object keeping numbers exact, so large ids compare correctly.
func decodeObject(raw json.RawMessage) (map[string]any, bool) {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || b[0] != '{' {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil, false
	}
	return m, true
}

// jsonEqual compares decoded JSON values; numbers compare by exact value, so 1 and 1.0 match
// and two large ids that round to the same float do not.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		return numberEqual(string(x), string(y))
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, present := y[k]
			if !present || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// numberEqual compares two JSON numbers exactly. An exponent could make an exact value
// astronomically large (1e999999999), so numbers with one compare as floats instead.
func numberEqual(x, y string) bool {
	if strings.ContainsAny(x, "eE") || strings.ContainsAny(y, "eE") {
		fx, errX := strconv.ParseFloat(x, 64)
		fy, errY := strconv.ParseFloat(y, 64)
		return errX == nil && errY == nil && fx == fy
	}
	rx, okX := new(big.Rat).SetString(x)
	ry, okY := new(big.Rat).SetString(y)
	return okX && okY && rx.Cmp(ry) == 0
}

// HasMetadataFilter reports whether the custom_metadata filter can exclude a job, decoded as
// Matches decodes it: an absent, null, empty or undecodable object filters nothing. Stores use
// it to skip decoding metadata when nothing depends on it.
func (q ListQuery) HasMetadataFilter() bool {
	b := bytes.TrimSpace(q.CustomMetadata)
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	var obj map[string]json.RawMessage
	if json.NewDecoder(bytes.NewReader(b)).Decode(&obj) != nil {
		return false
	}
	return len(obj) > 0
}
