package captions_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/captions"
	"github.com/scribehook/scribehook/captions/signedurl"
)

// A session's finals as an HLS subtitle track, read by a player through a signed URL.
func Example() {
	start := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC) // the session's audio began
	tr := captions.NewTrack(captions.Config{Segment: 4 * time.Second}, start)
	_ = tr.AddFinal(api.Utterance{Start: 1, End: 2.5, Text: "Good morning."})
	_ = tr.AddFinal(api.Utterance{Start: 3, End: 5.2, Text: "Let's begin."})
	tr.End(6, start.Add(7*time.Second))

	signer := signedurl.New(signedurl.DeriveKey("the read token"))
	exp := start.Add(2 * time.Hour)
	query := "?" + signer.Query("session-1", exp)
	playlist := tr.Playlist(time.Now(), captions.SegmentPath(query))
	// The signature is 43 characters of base64url; shown as SIG.
	fmt.Print(strings.ReplaceAll(string(playlist), signer.Sign("session-1", exp), "SIG"))
	seg, _ := tr.SegmentVTT(1, time.Now())
	fmt.Print(string(seg))
	// Output:
	// #EXTM3U
	// #EXT-X-VERSION:3
	// #EXT-X-TARGETDURATION:4
	// #EXT-X-MEDIA-SEQUENCE:0
	// #EXT-X-PLAYLIST-TYPE:EVENT
	// #EXT-X-PROGRAM-DATE-TIME:2026-11-24T10:00:00.000Z
	// #EXTINF:4.000,
	// captions/0.vtt?exp=1795521600&sig=SIG
	// #EXT-X-PROGRAM-DATE-TIME:2026-11-24T10:00:04.000Z
	// #EXTINF:2.000,
	// captions/1.vtt?exp=1795521600&sig=SIG
	// #EXT-X-ENDLIST
	// WEBVTT
	// X-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000
	//
	// 1
	// 00:00:04.000 --> 00:00:05.200
	// Let's begin.
}
