package captions_test

import (
	"strconv"
	"testing"

	"github.com/scribehook/scribehook/captions"
)

// FuzzParseSegmentName: a segment name from a URL parses to the one number whose name it is,
// or fails.
func FuzzParseSegmentName(f *testing.F) {
	for _, s := range []string{"0.vtt", "12.vtt", "012.vtt", "-1.vtt", "1.VTT", "999999999.vtt", "1e3.vtt", ".vtt", "1.vtt.vtt"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		n, err := captions.ParseSegmentName(name)
		if err != nil {
			return
		}
		if n < 0 || strconv.Itoa(n)+".vtt" != name {
			t.Fatalf("%q parsed to %d", name, n)
		}
	})
}

func TestParseSegmentName(t *testing.T) {
	for name, want := range map[string]int{"0.vtt": 0, "7.vtt": 7, "123456789.vtt": 123456789} {
		if n, err := captions.ParseSegmentName(name); err != nil || n != want {
			t.Errorf("%q: %d, %v; want %d", name, n, err, want)
		}
	}
	for _, bad := range []string{"", "vtt", ".vtt", "01.vtt", "1234567890.vtt", "1.m3u8", "+1.vtt", "1 .vtt", "１.vtt"} {
		if _, err := captions.ParseSegmentName(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
