// Package captions turns a live session's final transcripts into a live HLS subtitle track
// (RFC 8216): a media playlist of WebVTT segments that a video player (hls.js, Safari, ffmpeg,
// VLC) reads beside the session's audio or video.
//
//	t := captions.NewTrack(captions.Config{}, sessionStart) // 6 s segments, growing window
//	t.AddFinal(utterance)                                   // each final, in session order
//	playlist := t.Playlist(time.Now(), captions.SegmentPath("?exp=…&sig=…"))
//	vtt, err := t.SegmentVTT(0, time.Now())
//	t.End(recordingSeconds)                                 // the session ended: #EXT-X-ENDLIST
//
// Time is session time: seconds from the start of the session's audio, as utterance times
// are. Segment n covers [n×Segment, (n+1)×Segment) of it. Its cues keep their session times
// (X-TIMESTAMP-MAP maps local 0 to MPEGTS), and each segment carries
// #EXT-X-PROGRAM-DATE-TIME, the wall-clock time of its start (the track's start plus n×Segment),
// which is what a player aligns subtitles with when the video's playlist carries it too.
//
// While the session runs, a segment is listed once the wall clock has passed its end by
// Config.Delay: finals come after their speech, so a segment listed too early would miss
// them, and players never fetch a listed segment again. Once the session ends, every segment
// up to the end is listed and the playlist ends with #EXT-X-ENDLIST.
//
// A final's cues come from the subtitles package (line length, lines per cue and durations of
// Config.Profile); a cue that crosses a segment boundary is split at it, one part per segment.
// Everything here is pure: the same finals, configuration and clock give the same bytes.
package captions
