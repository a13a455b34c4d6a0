package subtitles

import (
	"encoding/json"
	"testing"

	"github.com/scribehook/scribehook/api"
)

func TestProfileForJob(t *testing.T) {
	base := DefaultProfile()
	for _, tc := range []struct {
		name                 string
		params               string
		wantChars, wantLines int
	}{
		{"the job's subtitles_config", `{"audio_url":"http://a/x.wav","subtitles_config":{"maximum_characters_per_row":20,"maximum_rows_per_caption":1}}`, 20, 1},
		{"no subtitles_config", `{"audio_url":"http://a/x.wav"}`, base.MaxCharsPerLine, base.MaxLines},
		{"no request_params", ``, base.MaxCharsPerLine, base.MaxLines},
		{"request_params that do not decode", `[1]`, base.MaxCharsPerLine, base.MaxLines},
	} {
		job := api.Job{ID: "j", Kind: api.KindPreRecorded, RequestParams: json.RawMessage(tc.params)}
		if got := base.ForJob(&job); got.MaxCharsPerLine != tc.wantChars || got.MaxLines != tc.wantLines || got.Name != base.Name {
			t.Errorf("%s: %d characters, %d lines (%s); want %d, %d (%s)", tc.name, got.MaxCharsPerLine, got.MaxLines, got.Name, tc.wantChars, tc.wantLines, base.Name)
		}
	}
}
