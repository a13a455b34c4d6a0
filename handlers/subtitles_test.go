package handlers

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/subtitles"
)

// Ids that differ only in characters a folder name cannot hold as they are get folders of
// their own: rendering one job never overwrites another's subtitles.
func TestRenderSubtitlesFolderPerJob(t *testing.T) {
	dir := t.TempDir()
	profile, err := subtitles.ProfileByName(subtitles.NetflixAdult)
	if err != nil {
		t.Fatal(err)
	}
	cfg := SubtitleRendering{Dir: dir, Profile: profile, Formats: []subtitles.Format{subtitles.SRT}}
	ids := []string{"job.1", "job_1", "job/1", "job 1", "..", "d291007a-2bc5-46e7-a7a2-2fcb767af716"}
	want := map[string][]byte{} // id → its SRT
	for i, id := range ids {
		job := &api.Job{ID: id, Kind: api.KindPreRecorded, Status: api.StatusDone, Result: api.RawResult(apitest.Result(uint64(i+1), 20*time.Second, 30))}
		out, err := renderSubtitles(cfg, job, nil, 1, time.Now())
		if err != nil {
			t.Fatalf("render job %q: %v", id, err)
		}
		if len(out.artifacts) != 1 {
			t.Fatalf("job %q: %d artifacts, want 1", id, len(out.artifacts))
		}
		a := out.artifacts[0]
		if wantPath := filepath.Join(dir, sinks.PathSegment(id), "subtitles.en.srt"); a.Path != wantPath {
			t.Errorf("job %q: artifact at %s, want %s", id, a.Path, wantPath)
		}
		want[id] = []byte(out.event.Files[0].Content)
	}
	for i, id := range ids {
		got, err := os.ReadFile(filepath.Join(dir, sinks.PathSegment(id), "subtitles.en.srt"))
		if err != nil || string(got) != string(want[id]) {
			t.Errorf("job %q: its subtitles were overwritten (%v)", id, err)
		}
		for _, other := range ids[:i] {
			if string(want[other]) == string(want[id]) {
				t.Fatalf("jobs %q and %q render the same subtitles: the test cannot tell them apart", other, id)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(ids) {
		t.Errorf("%d folders for %d jobs", len(entries), len(ids))
	}
}

func TestArtifactName(t *testing.T) {
	tests := []struct{ base, lang, ext, want string }{
		{"subtitles", "en", ".srt", "subtitles.en.srt"},
		{"subtitles", "pt-BR", ".vtt", "subtitles.pt-BR.vtt"},
		{"subtitles", "", ".srt", "subtitles.srt"},
		{"subtitles", "x.y", ".srt", "subtitles.x.y.srt"},
		{"subtitles", "x_y", ".srt", "subtitles.x_y.srt"},
		{"subtitles", "../x", ".srt", "subtitles.%2E.%2Fx.srt"},
	}
	for _, tt := range tests {
		if got := artifactName(tt.base, tt.lang, tt.ext); got != tt.want {
			t.Errorf("artifactName(%q, %q, %q) = %q, want %q", tt.base, tt.lang, tt.ext, got, tt.want)
		}
	}
}
