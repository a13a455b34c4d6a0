package submitter

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strconv"

	"github.com/scribehook/scribehook/api"
)

// listValues encodes a list query. Arrays (status, kind) repeat their parameter; the
// custom_metadata object travels as one compact JSON text.
//
// This is a private stand-in for api.ListQuery.Values, which is being written in package api;
// once it exists this should call it so that client and sandbox share one encoding.
func listValues(q api.ListQuery) url.Values {
	v := url.Values{}
	if q.Offset != nil {
		v.Set("offset", strconv.Itoa(*q.Offset))
	}
	if q.Limit != nil {
		v.Set("limit", strconv.Itoa(*q.Limit))
	}
	if q.Date != "" {
		v.Set("date", q.Date)
	}
	if q.BeforeDate != "" {
		v.Set("before_date", q.BeforeDate)
	}
	if q.AfterDate != "" {
		v.Set("after_date", q.AfterDate)
	}
	for _, s := range q.Status {
		v.Add("status", string(s))
	}
	for _, k := range q.Kind {
		v.Add("kind", string(k))
	}
	if m := bytes.TrimSpace(q.CustomMetadata); len(m) > 0 && string(m) != "null" {
		var compact bytes.Buffer
		if json.Compact(&compact, m) == nil {
			m = compact.Bytes()
		}
		v.Set("custom_metadata", string(m))
	}
	return v
}
