package api

import (
	"encoding/json"
	"fmt"
	"time"
)

// TimeLayout is how the service writes dates: ISO 8601 in UTC with milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// Time is a date of the wire model. It decodes the ISO 8601 forms seen in practice (with or
// without fraction and zone) and encodes the service's own form; the zero Time encodes as null.
type Time struct {
	time.Time
}

// NewTime returns t as a wire date, in UTC.
func NewTime(t time.Time) Time { return Time{t.UTC()} }

// Now is the current time as a wire date.
func Now() Time { return NewTime(time.Now()) }

// PtrTime returns a pointer to a wire date, for optional fields.
func PtrTime(t time.Time) *Time { v := NewTime(t); return &v }

var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02",
}

// ParseTime parses an ISO 8601 date or date-time; values without a zone are taken as UTC.
// The moment must fall in years 0000 to 9999 in UTC: outside them TimeLayout cannot write it
// back in a form ParseTime reads ("0000-01-01T00:00:00+01:00" is in year -1 in UTC).
func ParseTime(s string) (time.Time, error) {
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			t = t.UTC()
			if y := t.Year(); y < 0 || y > 9999 {
				return time.Time{}, fmt.Errorf("%q is outside years 0000 to 9999 in UTC", s)
			}
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an ISO 8601 date-time", s)
}

// MarshalJSON writes the service's form, or null for the zero time.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.UTC().Format(TimeLayout))
}

// UnmarshalJSON reads any form ParseTime accepts, and null.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("date-time must be a string: %w", err)
	}
	parsed, err := ParseTime(s)
	if err != nil {
		return err
	}
	t.Time = parsed
	return nil
}

// String formats like the wire.
func (t Time) String() string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(TimeLayout)
}
