package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/receiver"
)

// vttCue is one cue of a WebVTT file.
type vttCue struct {
	start, end time.Duration
	text       string
}

var cueTiming = regexp.MustCompile(`^(?:(\d+):)?(\d\d):(\d\d)\.(\d\d\d) --> (?:(\d+):)?(\d\d):(\d\d)\.(\d\d\d)`)

// parseVTT reads the cues of a WebVTT file as ffmpeg writes it, joining the parts of a cue
// split at a segment boundary (same text, one ending where the next starts).
func parseVTT(t *testing.T, b []byte) []vttCue {
	t.Helper()
	ms := func(m []string, i int) time.Duration {
		h, _ := strconv.Atoi(m[i])
		mi, _ := strconv.Atoi(m[i+1])
		s, _ := strconv.Atoi(m[i+2])
		f, _ := strconv.Atoi(m[i+3])
		return time.Duration(((h*60+mi)*60+s)*1000+f) * time.Millisecond
	}
	var cues []vttCue
	for block := range strings.SplitSeq(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		for i, l := range lines {
			m := cueTiming.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			c := vttCue{start: ms(m, 1), end: ms(m, 5), text: strings.Join(lines[i+1:], "\n")}
			if n := len(cues); n > 0 && cues[n-1].text == c.text && cues[n-1].end == c.start {
				cues[n-1].end = c.end
			} else {
				cues = append(cues, c)
			}
			break
		}
	}
	return cues
}

// TestE2ECaptionsThroughServe: a live session's finals posted to serve through a static route
// come out of its HLS playlist, read by ffmpeg through the signed URL that `scribehook live
// captions-url` prints: every final, in order, at its time.
func TestE2ECaptionsThroughServe(t *testing.T) {
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("ffmpeg is not installed (Debian: apt-get install ffmpeg; make deps installs it): the HLS captions are not read by a real player")
	}
	const readToken = "cmVhZC10b2tlbi1mb3ItY2FwdGlvbnMtdGVzdHMtNDI"
	const session = "5e551000-0000-4000-8000-00000000ca97"
	const finals = 12
	dir, db := tempDB(t)
	addr := "127.0.0.1:" + freePort(t)
	base := "http://" + addr
	path := writeSQLiteConfig(t, dir, db, "listen: "+addr+"\n", "public_url: "+base+"\n",
		"routes: [{name: partner, token_env: TEST_PARTNER_TOKEN}]\n", "sinks: []\n",
		"captions: {segment: 2s, delay: 0s}\n")
	t.Setenv("TEST_PARTNER_TOKEN", partnerToken)
	t.Setenv("SCRIBEHOOK_READ_TOKEN", readToken)
	t.Setenv("SCRIBEHOOK_API_KEY", "")
	startServe(t, path, addr)

	callback := base + "/v1/callbacks/" + partnerToken
	for i := 1; i <= finals; i++ {
		if status, _, err := postCallback(callback, liveTranscript(session, i)); err != nil || status != "stored" {
			t.Fatalf("final %d: %s %v", i, status, err)
		}
	}
	end := fmt.Appendf(nil, `{"id":%q,"event":"live.end_session","payload":{"session_id":%q,`+
		`"created_at":"2026-11-24T10:00:59.000Z","type":"end_session"}}`, session, session)
	if status, _, err := postCallback(callback, end); err != nil || status != "stored" {
		t.Fatalf("end_session: %s %v", status, err)
	}
	bearer := http.Header{"Authorization": {"Bearer " + readToken}}
	testwait.For(t, "the playlist's end", 30*time.Second, func() bool {
		code, b := httpDo(t, http.MethodGet, base+"/v1/live/"+session+"/captions.m3u8", bearer, nil)
		return code == http.StatusOK && strings.HasSuffix(string(b), "#EXT-X-ENDLIST\n")
	})

	out, errOut, err := runCmd(context.Background(), nil, "--config", path, "live", "captions-url", session, "--ttl", "1h", "-o", "json")
	if err != nil {
		t.Fatalf("captions-url: %v\n%s", err, errOut)
	}
	var u receiver.CaptionsURL
	if err := json.Unmarshal([]byte(out), &u); err != nil {
		t.Fatalf("captions-url output: %v: %s", err, out)
	}
	if !strings.HasPrefix(u.URL, base+"/v1/live/"+session+"/captions.m3u8?exp=") || strings.Contains(out, readToken) {
		t.Fatalf("captions-url printed %+v", u)
	}
	if code, _ := httpDo(t, http.MethodGet, u.PageURL, nil, nil); code != http.StatusOK {
		t.Errorf("caption page through its signed URL: %d", code)
	}

	vtt := filepath.Join(t.TempDir(), "out.vtt")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ffmpeg, "-nostdin", "-loglevel", "error", "-y", "-i", u.URL, "-f", "webvtt", vtt)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, b)
	}
	b, err := os.ReadFile(vtt)
	if err != nil {
		t.Fatal(err)
	}
	cues := parseVTT(t, b)
	if len(cues) != finals {
		t.Fatalf("ffmpeg read %d cues, want %d:\n%s", len(cues), finals, b)
	}
	for i, c := range cues {
		n := i + 1 // liveTranscript(session, n): "word n" from n s to n.5 s
		if c.text != fmt.Sprintf("word %d", n) || c.start != time.Duration(n)*time.Second ||
			c.end < time.Duration(n)*time.Second+500*time.Millisecond || c.end >= time.Duration(n+1)*time.Second {
			t.Errorf("cue %d: %+v, want \"word %d\" from %ds to at least %d.5s", i, c, n, n, n)
		}
	}
}
