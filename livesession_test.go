package scribehook_test

import (
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/submitter"
)

// Stream takes the audio format from the session: options that leave it at zero get the
// request's (or the service's defaults, 8 bits for a-law), and a format that differs from the
// session's is refused, naming both, rather than sent for the service to misread.
func TestLiveSessionStreamOptions(t *testing.T) {
	session := func(req api.LiveRequest) scribehook.LiveSession {
		return scribehook.LiveSession{Settings: req.Settings()}
	}
	got, err := session(api.LiveRequest{SampleRate: api.Int(8000), Channels: api.Int(2)}).
		StreamOptions(submitter.StreamOptions{Realtime: true, ChunkDuration: 50 * time.Millisecond})
	if err != nil || got.SampleRate != 8000 || got.BitDepth != 16 || got.Channels != 2 || !got.Realtime || got.ChunkDuration != 50*time.Millisecond {
		t.Errorf("8 kHz stereo: %+v, %v", got, err)
	}
	if got, err := session(api.LiveRequest{Encoding: api.EncodingALaw}).StreamOptions(submitter.StreamOptions{}); err != nil ||
		got.SampleRate != api.DefaultLiveSampleRate || got.BitDepth != 8 || got.Channels != 1 {
		t.Errorf("a-law with the defaults: %+v, %v", got, err)
	}
	if _, err := session(api.LiveRequest{SampleRate: api.Int(16000)}).StreamOptions(submitter.StreamOptions{SampleRate: 16000}); err != nil {
		t.Errorf("the session's own rate repeated: %v", err)
	}
	_, err = session(api.LiveRequest{SampleRate: api.Int(8000)}).StreamOptions(submitter.StreamOptions{SampleRate: 16000})
	if err == nil || !strings.Contains(err.Error(), "StreamOptions.SampleRate is 16000, the session's is 8000") {
		t.Errorf("a rate other than the session's: %v", err)
	}
}
