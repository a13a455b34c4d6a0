package captions_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/captions"
	"github.com/scribehook/scribehook/subtitles"
)

var start = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

// finals are three finals: one inside segment 0, one across the boundary of 0 and 1, one in
// segment 2, with text the renderer must escape.
var finals = []api.Utterance{
	{Start: 1, End: 2.5, Text: "Hello world."},
	{Start: 5, End: 8, Text: "This one crosses the boundary."},
	{Start: 13, End: 13.5, Text: "Last & <words>"},
}

func track(t *testing.T, cfg captions.Config) *captions.Track {
	t.Helper()
	tr := captions.NewTrack(cfg, start)
	for _, u := range finals {
		if err := tr.AddFinal(u); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

func lines(s ...string) string { return strings.Join(s, "\n") + "\n" }

func TestPlaylistLive(t *testing.T) {
	tr := track(t, captions.Config{})
	cases := []struct {
		at   time.Duration
		want string
	}{
		{5 * time.Second, lines("#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:6", "#EXT-X-MEDIA-SEQUENCE:0",
			"#EXT-X-PLAYLIST-TYPE:EVENT")},
		{13 * time.Second, lines("#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:6", "#EXT-X-MEDIA-SEQUENCE:0",
			"#EXT-X-PLAYLIST-TYPE:EVENT",
			"#EXT-X-PROGRAM-DATE-TIME:2026-11-24T10:00:00.000Z", "#EXTINF:6.000,", "captions/0.vtt?exp=1&sig=x",
			"#EXT-X-PROGRAM-DATE-TIME:2026-11-24T10:00:06.000Z", "#EXTINF:6.000,", "captions/1.vtt?exp=1&sig=x")},
	}
	for _, tc := range cases {
		if got := string(tr.Playlist(start.Add(tc.at), captions.SegmentPath("?exp=1&sig=x"))); got != tc.want {
			t.Errorf("at %s:\n%s\nwant:\n%s", tc.at, got, tc.want)
		}
	}
}

// TestPlaylistDelayWindow: the delay holds segments back, and the window slides the media
// sequence.
func TestPlaylistDelayWindow(t *testing.T) {
	tr := track(t, captions.Config{Segment: 2 * time.Second, Delay: 3 * time.Second, Window: 6 * time.Second})
	// 15 s in, 12 s are past the delay: segments 0-5 exist, the window keeps 3-5.
	got := string(tr.Playlist(start.Add(15*time.Second), captions.SegmentPath("")))
	want := lines("#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:2", "#EXT-X-MEDIA-SEQUENCE:3",
		"#EXT-X-PROGRAM-DATE-TIME:2026-11-24T10:00:06.000Z", "#EXTINF:2.000,", "captions/3.vtt",
		"#EXT-X-PROGRAM-DATE-TIME:2026-11-24T10:00:08.000Z", "#EXTINF:2.000,", "captions/4.vtt",
		"#EXT-X-PROGRAM-DATE-TIME:2026-11-24T10:00:10.000Z", "#EXTINF:2.000,", "captions/5.vtt")
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if _, err := tr.SegmentVTT(6, start.Add(15*time.Second)); !errors.Is(err, captions.ErrNotListed) {
		t.Errorf("segment 6 before its delay: %v, want ErrNotListed", err)
	}
}

func TestPlaylistEnded(t *testing.T) {
	tr := track(t, captions.Config{})
	tr.End(14, start.Add(15*time.Second))
	want := lines("#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:6", "#EXT-X-MEDIA-SEQUENCE:0",
		"#EXT-X-PLAYLIST-TYPE:EVENT",
		"#EXT-X-PROGRAM-DATE-TIME:2026-11-24T10:00:00.000Z", "#EXTINF:6.000,", "captions/0.vtt",
		"#EXT-X-PROGRAM-DATE-TIME:2026-11-24T10:00:06.000Z", "#EXTINF:6.000,", "captions/1.vtt",
		"#EXT-X-PROGRAM-DATE-TIME:2026-11-24T10:00:12.000Z", "#EXTINF:2.000,", "captions/2.vtt",
		"#EXT-X-ENDLIST")
	// The clock no longer matters once the session ended.
	for _, at := range []time.Duration{0, time.Hour} {
		if got := string(tr.Playlist(start.Add(at), captions.SegmentPath(""))); got != want {
			t.Errorf("at %s:\n%s\nwant:\n%s", at, got, want)
		}
	}
}

// TestPlaylistEndedKeepsListed: segments listed while the session ran stay listed whole when
// it ends short of them (RFC 8216 §6.2.1: a playlist only grows).
func TestPlaylistEndedKeepsListed(t *testing.T) {
	tr := track(t, captions.Config{})
	before := string(tr.Playlist(start.Add(30*time.Second), captions.SegmentPath("")))
	tr.End(14, start.Add(30*time.Second))
	after := string(tr.Playlist(start.Add(30*time.Second), captions.SegmentPath("")))
	if after != before+"#EXT-X-ENDLIST\n" {
		t.Errorf("ended playlist:\n%s\nwant the running one and ENDLIST:\n%s", after, before)
	}
	if strings.Count(after, "#EXTINF:6.000,") != 5 {
		t.Errorf("want 5 whole segments:\n%s", after)
	}
}

func TestSegmentVTT(t *testing.T) {
	tr := track(t, captions.Config{MPEGTS: 900000})
	tr.End(0, start.Add(14*time.Second))
	want := []string{
		lines("WEBVTT", "X-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000", "",
			"1", "00:00:01.000 --> 00:00:02.500", "Hello world.", "",
			"2", "00:00:05.000 --> 00:00:06.000", "This one crosses the boundary.", ""),
		lines("WEBVTT", "X-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000", "",
			"1", "00:00:06.000 --> 00:00:08.000", "This one crosses the boundary.", ""),
		// The cue lasts the profile's minimum duration; the segment ends with it.
		lines("WEBVTT", "X-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000", "",
			"1", "00:00:13.000 --> 00:00:13.834", "Last &amp; &lt;words&gt;", ""),
	}
	for n, w := range want {
		got, err := tr.SegmentVTT(n, start)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != w {
			t.Errorf("segment %d:\n%s\nwant:\n%s", n, got, w)
		}
		// The package's strict check knows no header lines: X-TIMESTAMP-MAP is HLS's.
		plain := strings.Replace(string(got), "X-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000\n", "", 1)
		if err := subtitles.ValidateVTT([]byte(plain)); err != nil {
			t.Errorf("segment %d: %v", n, err)
		}
	}
	if _, err := tr.SegmentVTT(3, start); !errors.Is(err, captions.ErrNotListed) {
		t.Errorf("segment 3: %v, want ErrNotListed", err)
	}
	if _, err := tr.SegmentVTT(-1, start); !errors.Is(err, captions.ErrNotListed) {
		t.Errorf("segment -1: %v, want ErrNotListed", err)
	}
}

// TestSegmentEmpty: a segment without speech is a valid file with its header alone.
func TestSegmentEmpty(t *testing.T) {
	tr := track(t, captions.Config{})
	got, err := tr.SegmentVTT(3, start.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if want := "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\n\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestLongFinal: a final longer than a cue is cut by the profile's rules, every line within
// its length.
func TestLongFinal(t *testing.T) {
	p := subtitles.DefaultProfile()
	tr := captions.NewTrack(captions.Config{Segment: 60 * time.Second, Profile: &p}, start)
	text := strings.Repeat("several words of a long sentence ", 6)
	if err := tr.AddFinal(api.Utterance{Start: 0, End: 12, Text: text}); err != nil {
		t.Fatal(err)
	}
	tr.End(12, start)
	b, err := tr.SegmentVTT(0, start)
	if err != nil {
		t.Fatal(err)
	}
	cues := strings.Count(string(b), " --> ")
	if cues < 2 {
		t.Errorf("one final of %d characters in %d cue(s):\n%s", len(text), cues, b)
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if !strings.Contains(l, "-->") && !strings.HasPrefix(l, "X-TIMESTAMP-MAP=") && len([]rune(l)) > p.MaxCharsPerLine {
			t.Errorf("line of %d runes over %d: %q", len([]rune(l)), p.MaxCharsPerLine, l)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		cfg  captions.Config
		want string
	}{
		{captions.Config{}, ""},
		{captions.Config{Segment: 2 * time.Second, Delay: 10 * time.Second, Window: 6 * time.Second}, ""},
		{captions.Config{Segment: 500 * time.Millisecond}, "segment must be from 1s to 1m0s (got 500ms)"},
		{captions.Config{Segment: 1500*time.Millisecond + time.Microsecond}, "segment must be whole milliseconds"},
		{captions.Config{Delay: -time.Second}, "delay must be from 0s to 1h0m0s (got -1s)"},
		{captions.Config{Window: 10 * time.Second}, "window must be 0 (every segment) or at least three segments, 18s (got 10s)"},
		{captions.Config{MPEGTS: -1}, "mpegts must be from 0"},
	}
	for _, tc := range cases {
		err := tc.cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.cfg, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
