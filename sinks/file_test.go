package sinks

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/internal/logx"
)

const succeededData = `{"id":"job-1","status":"done","kind":"pre-recorded","created_at":"2026-11-20T10:00:00.000Z",
 "request_params":null,"file":null,
 "result":{"transcription":{"full_transcript":"Hello there. Second line. An hour later.","languages":["en"],"utterances":[
  {"start":3.46,"end":5.0,"confidence":0.9,"channel":0,"speaker":1,"text":"Second line.","words":[]},
  {"start":1.24,"end":3.36,"confidence":0.9,"channel":0,"speaker":0,"text":" Hello   there.\n","words":[]},
  {"start":3661.06,"end":3662.96,"confidence":0.9,"channel":1,"text":"An hour later.","words":[]},
  {"start":6,"end":7,"confidence":0.9,"channel":0,"speaker":0,"text":"   ","words":[]}
 ]}}}`

// The transcript golden: time order, tenths, the speaker as given (else the channel), blank
// utterances left out, white space collapsed.
const transcriptGolden = `[00:00:01.2 → 00:00:03.4] Speaker 0: Hello there.
[00:00:03.5 → 00:00:05.0] Speaker 1: Second line.
[01:01:01.1 → 01:01:03.0] Speaker 1: An hour later.
`

var fileCreated = time.Date(2026, 11, 20, 10, 11, 12, 345e6, time.UTC)

func fileEvent(typ, id string, data string) api.Event {
	return api.Event{ID: id, Type: typ, CreatedAt: api.NewTime(fileCreated), JobID: "job-1", Kind: api.KindPreRecorded,
		Data: json.RawMessage(data)}
}

func subtitlesData(files ...SubtitleFile) string {
	b, _ := json.Marshal(SubtitlesReadyData{JobID: "job-1", Files: files})
	return string(b)
}

func newFileSink(t *testing.T) (*FileSink, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out", "nested")
	s, err := NewFile(Spec{Name: "files", Kind: KindFile, Dir: dir}, Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

// tree lists the files under dir with their contents.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func names(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestFileSinkLayout(t *testing.T) {
	s, dir := newFileSink(t)
	srt := "1\n00:00:01,240 --> 00:00:03,360\nHello there.\n"
	vtt := "WEBVTT\n\n00:00:01.240 --> 00:00:03.360\nHello there.\n"
	events := []api.Event{
		fileEvent(api.EventJobCreated, "ev-created", `{"id":"job-1","status":"queued"}`),
		fileEvent(api.EventJobSucceeded, "ev-done", succeededData),
		fileEvent(api.EventSubtitlesReady, "ev-subs", subtitlesData(
			SubtitleFile{Format: "srt", Language: "en", Name: "subtitles.en.srt", Content: srt},
			SubtitleFile{Format: "vtt", Language: "en", Name: "subtitles.en.vtt", Content: vtt},
		)),
	}
	live := fileEvent("live.transcript", "ev/live 1", `{"type":"transcript","data":{"utterance":{"text":"a <b> & c"}}}`)
	live.Kind, live.Category = api.KindLive, api.CategoryFinalTranscripts
	events = append(events, live)
	for _, ev := range events {
		if err := s.Deliver(context.Background(), ev); err != nil {
			t.Fatalf("Deliver(%s): %v", ev.Type, err)
		}
	}

	got := tree(t, dir)
	wantNames := []string{
		"job-1/events/20261120T101112.345Z-job.created-ev-created.json",
		"job-1/events/20261120T101112.345Z-job.succeeded-ev-done.json",
		"job-1/events/20261120T101112.345Z-live.transcript-ev_live_1.json",
		"job-1/events/20261120T101112.345Z-subtitles.ready-ev-subs.json",
		"job-1/subtitles.en.srt",
		"job-1/subtitles.en.vtt",
		"job-1/transcript.txt",
	}
	if g := names(got); strings.Join(g, "\n") != strings.Join(wantNames, "\n") {
		t.Fatalf("files\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(wantNames, "\n"))
	}
	if got["job-1/transcript.txt"] != transcriptGolden {
		t.Errorf("transcript.txt\n%s\nwant\n%s", got["job-1/transcript.txt"], transcriptGolden)
	}
	if got["job-1/subtitles.en.srt"] != srt || got["job-1/subtitles.en.vtt"] != vtt {
		t.Errorf("subtitle files differ: %q %q", got["job-1/subtitles.en.srt"], got["job-1/subtitles.en.vtt"])
	}
	wantLive := `{
  "id": "ev/live 1",
  "type": "live.transcript",
  "created_at": "2026-11-20T10:11:12.345Z",
  "job_id": "job-1",
  "kind": "live",
  "category": "final_transcripts",
  "data": {
    "type": "transcript",
    "data": {
      "utterance": {
        "text": "a <b> & c"
      }
    }
  }
}
`
	if g := got["job-1/events/20261120T101112.345Z-live.transcript-ev_live_1.json"]; g != wantLive {
		t.Errorf("live event file\n%s\nwant\n%s", g, wantLive)
	}
	for _, ev := range events {
		var back api.Event
		if err := json.Unmarshal([]byte(got["job-1/events/"+EventFileName(ev)]), &back); err != nil || back.ID != ev.ID || back.Type != ev.Type {
			t.Errorf("event file of %s does not decode to the event: %v", ev.ID, err)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, "job-1", "transcript.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("transcript mode %v, want 0644", fi.Mode().Perm())
	}
}

// Writing the same events again changes nothing and leaves no temporary file behind.
func TestFileSinkIdempotent(t *testing.T) {
	s, dir := newFileSink(t)
	events := []api.Event{
		fileEvent(api.EventJobSucceeded, "ev-done", succeededData),
		fileEvent(api.EventSubtitlesReady, "ev-subs", subtitlesData(SubtitleFile{Format: "srt", Language: "fr", Name: "subtitles.fr.srt", Content: "x"})),
	}
	deliverAll := func() {
		for _, ev := range events {
			if err := s.Deliver(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	deliverAll()
	first := tree(t, dir)
	deliverAll()
	deliverAll()
	second := tree(t, dir)
	if len(first) != 4 || len(second) != len(first) {
		t.Fatalf("files %v then %v", names(first), names(second))
	}
	for name, content := range first {
		if second[name] != content {
			t.Errorf("%s changed on a repeated delivery", name)
		}
	}
}

func TestTranscriptText(t *testing.T) {
	got, err := TranscriptText(json.RawMessage(succeededData))
	if err != nil || got != transcriptGolden {
		t.Errorf("from a job: %q, %v", got, err)
	}
	// A bare result is read too.
	var job api.Job
	if err := json.Unmarshal([]byte(succeededData), &job); err != nil {
		t.Fatal(err)
	}
	if got, err := TranscriptText(job.Result); err != nil || got != transcriptGolden {
		t.Errorf("from a bare result: %q, %v", got, err)
	}
	for _, data := range []string{`{"id":"j","status":"done"}`, `{"id":"j","result":{"metadata":{"audio_duration":1}}}`} {
		if got, err := TranscriptText(json.RawMessage(data)); err != nil || got != "" {
			t.Errorf("TranscriptText(%s) = %q, %v; want empty", data, got, err)
		}
	}
	if _, err := TranscriptText(json.RawMessage(`[`)); err == nil {
		t.Error("malformed data passed")
	}
	for sec, want := range map[float64]string{0: "00:00:00.0", 0.04: "00:00:00.0", 0.06: "00:00:00.1", 59.96: "00:01:00.0",
		3599.94: "00:59:59.9", 360000: "100:00:00.0", -1: "00:00:00.0"} {
		if got := transcriptClock(sec); got != want {
			t.Errorf("transcriptClock(%v) = %q, want %q", sec, got, want)
		}
	}
}

// A job.succeeded without a transcript (an error'd add-on, an empty result) writes its event only.
func TestFileSinkNoTranscript(t *testing.T) {
	s, dir := newFileSink(t)
	if err := s.Deliver(context.Background(), fileEvent(api.EventJobSucceeded, "ev", `{"id":"job-1","status":"done"}`)); err != nil {
		t.Fatal(err)
	}
	if got := names(tree(t, dir)); len(got) != 1 || !strings.HasPrefix(got[0], "job-1/events/") {
		t.Errorf("files %v", got)
	}
}

func TestFileSinkPermanentFailures(t *testing.T) {
	s, dir := newFileSink(t)
	bad := func(mut func(*api.Event)) api.Event {
		ev := fileEvent(api.EventSubtitlesReady, "ev", subtitlesData(SubtitleFile{Name: "ok.srt", Content: "x"}))
		mut(&ev)
		return ev
	}
	tests := map[string]api.Event{
		"empty job id":          bad(func(e *api.Event) { e.JobID = "" }),
		"no event id":           bad(func(e *api.Event) { e.ID = "" }),
		"subtitle name escapes": bad(func(e *api.Event) { e.Data = json.RawMessage(subtitlesData(SubtitleFile{Name: "../../etc/x"})) }),
		"subtitle name empty":   bad(func(e *api.Event) { e.Data = json.RawMessage(subtitlesData(SubtitleFile{Name: ""})) }),
		"subtitle name reserved": bad(func(e *api.Event) {
			e.Data = json.RawMessage(subtitlesData(SubtitleFile{Name: "transcript.txt"}))
		}),
		"subtitle name twice": bad(func(e *api.Event) {
			e.Data = json.RawMessage(subtitlesData(SubtitleFile{Name: "a.srt"}, SubtitleFile{Name: "a.srt"}))
		}),
		"subtitle job differs": bad(func(e *api.Event) {
			e.Data = json.RawMessage(`{"job_id":"job-2","files":[]}`)
		}),
		"subtitles malformed": bad(func(e *api.Event) { e.Data = json.RawMessage(`{"files":{}}`) }),
		"succeeded malformed": bad(func(e *api.Event) {
			e.Type = api.EventJobSucceeded
			e.Data = json.RawMessage(`"a string"`)
		}),
	}
	for name, ev := range tests {
		err := s.Deliver(context.Background(), ev)
		if f := AsFailure(err); err == nil || !f.Permanent {
			t.Errorf("%s: Deliver = %v, want a permanent failure", name, err)
		}
	}
	if got := tree(t, dir); len(got) != 0 {
		t.Errorf("refused events left files: %v", names(got))
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(dir)), "etc")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a path escaped the sink's directory: %v", err)
	}
}

// A reader never sees part of a file: while subtitles are rewritten over and over with two
// large contents, every read finds one or the other whole.
func TestFileSinkAtomic(t *testing.T) {
	s, dir := newFileSink(t)
	a := strings.Repeat("A", 1<<20)
	b := strings.Repeat("B", 3<<18)
	path := filepath.Join(dir, "job-1", "subtitles.en.srt")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads, partial int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			got, err := os.ReadFile(path)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				t.Error(err)
				return
			}
			reads++
			if string(got) != a && string(got) != b {
				partial++
			}
		}
	}()
	for i := 0; i < 10; i++ {
		content := a
		if i%2 == 1 {
			content = b
		}
		ev := fileEvent(api.EventSubtitlesReady, "ev-"+string(rune('a'+i)), subtitlesData(SubtitleFile{Name: "subtitles.en.srt", Content: content}))
		if err := s.Deliver(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if partial > 0 {
		t.Errorf("%d of %d reads saw a partial file", partial, reads)
	}
	if reads == 0 {
		t.Error("the reader never saw the file")
	}
	for name := range tree(t, dir) {
		if strings.Contains(name, ".tmp-") {
			t.Errorf("temporary file left: %s", name)
		}
	}
}

// A disk error is a retryable failure of the sink.
func TestFileSinkDiskErrorRetryable(t *testing.T) {
	s, sinkDir := newFileSink(t)
	if err := os.WriteFile(filepath.Join(sinkDir, "job-1"), []byte("a file where the job directory goes"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := s.Deliver(context.Background(), fileEvent(api.EventJobCreated, "ev", `{}`))
	if err == nil || AsFailure(err).Permanent {
		t.Errorf("Deliver = %v, want a retryable failure", err)
	}
}

func TestNewFileDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := NewFile(Spec{Name: "files", Kind: KindFile, Dir: file}, Deps{})
	var se *SpecError
	if !errors.As(err, &se) || se.Field != "Dir" {
		t.Errorf("NewFile on a file = %v, want a SpecError on Dir", err)
	}
	rel := Spec{Name: "files", Kind: KindFile, Dir: "relative/out"}
	t.Chdir(t.TempDir())
	s, err := NewFile(rel, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(s.dir) {
		t.Errorf("dir %q is not absolute: a later chdir would move the output", s.dir)
	}
	if fi, err := os.Stat("relative/out"); err != nil || !fi.IsDir() {
		t.Errorf("directory not created: %v", err)
	}
}

func TestEventFileName(t *testing.T) {
	ev := api.Event{ID: "a:b/c\\d", Type: "live.*weird type*", CreatedAt: api.NewTime(fileCreated)}
	if got, want := EventFileName(ev), "20261120T101112.345Z-live._weird_type_-a_b_c_d.json"; got != want {
		t.Errorf("EventFileName = %q, want %q", got, want)
	}
	if got := EventFileName(api.Event{ID: strings.Repeat("x", 300), Type: "t"}); len(got) > 255 {
		t.Errorf("name of %d bytes", len(got))
	}
}

// BenchmarkTranscriptText2h renders the transcript of the 2-hour result (20,000 words) from its
// job.succeeded data, the job record.
func BenchmarkTranscriptText2h(b *testing.B) {
	data := succeeded2h(b).Data
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		text, err := TranscriptText(data)
		if err != nil || text == "" {
			b.Fatal(err)
		}
	}
}

// checkTranscriptText compares TranscriptText with the reference on data, transcriptTextOfRecord
// (TranscriptText as it was before it decoded only what it prints, commit 75eb1af: the whole
// job record, words included, then a bare result): the same text when the reference succeeds;
// when it fails, an error too, unless the record fails only outside what is printed (then the
// lean decoding succeeds and the transcript is written).
func checkTranscriptText(t *testing.T, data []byte) {
	t.Helper()
	checkTranscriptTextAgainst(t, data, transcriptTextOfRecord)
}

// transcriptTextOfRecord is the reference of TranscriptText: data decoded as a whole api.Job,
// its result as a whole api.Result (or data as a bare result when the record has none).
func transcriptTextOfRecord(data json.RawMessage) (string, error) {
	var job api.Job
	if err := json.Unmarshal(data, &job); err != nil {
		return "", err
	}
	res, err := job.DecodeResult()
	if err != nil {
		return "", err
	}
	if res == nil {
		var r api.Result
		if err := json.Unmarshal(data, &r); err == nil && r.Transcription != nil {
			res = &r
		}
	}
	if res == nil || res.Transcription == nil {
		return "", nil
	}
	utts := make([]transcriptUtterance, len(res.Transcription.Utterances))
	for i, u := range res.Transcription.Utterances {
		utts[i] = transcriptUtterance{Start: u.Start, End: u.End, Channel: u.Channel, Text: u.Text, Speaker: u.Speaker}
	}
	return renderTranscript(utts), nil
}

func checkTranscriptTextAgainst(t *testing.T, data []byte, reference func(json.RawMessage) (string, error)) {
	t.Helper()
	got, err := TranscriptText(data)
	want, wantErr := reference(data)
	if wantErr == nil {
		if err != nil || got != want {
			t.Fatalf("TranscriptText(%.200q) = %q, %v; the reference gives %q", data, got, err, want)
		}
		return
	}
	if err != nil {
		return // both fail (the messages name their own Go types)
	}
	var lean transcriptJob
	if json.Unmarshal(data, &lean) != nil {
		t.Fatalf("TranscriptText(%.200q) = %q with no error; the reference fails with %v", data, got, wantErr)
	}
}

var transcriptCases = []string{
	succeededData,
	`{"id":"j","status":"done"}`,
	`{"id":"j","result":{"metadata":{"audio_duration":1}}}`,
	`{"id":"j","result":null,"transcription":{"utterances":[{"start":1,"end":2,"text":"bare"}]}}`,
	`{"transcription":{"utterances":[{"start":1,"end":2,"text":"bare"}]},"metadata":{"audio_duration":"x"}}`,
	`{"RESULT":{"Transcription":{"UTTERANCES":[{"START":1,"end":2,"Text":"folded","SPEAKER":3}]}}}`,
	`{"result":{"transcription":{"utterances":[{"start":1,"text":"a"}]}},"result":{"transcription":{"utterances":[{"start":2,"text":"b"}]}}}`,
	`{"result":{"transcription":{"utterances":[{"start":1,"text":"a","speaker":null,"channel":2}]}}}`,
	`{"result":{"transcription":{"utterances":[{"start":1,"text":"a","speaker":1.5}]}}}`,
	`{"result":{"transcription":{"utterances":[{"start":1,"text":"a","channel":"x"}]}}}`,
	`{"result":{"transcription":{"utterances":[{"start":"1","text":"a"}]}}}`,
	`{"result":{"transcription":{"utterances":[{"start":1,"text":5}]}}}`,
	`{"result":{"transcription":{"utterances":{}}}}`,
	`{"result":{"transcription":{"utterances":null}}}`,
	`{"result":{"transcription":null}}`,
	`{"result":{}}`,
	`{"result":[]}`,
	`{"result":"x"}`,
	`{"result":{"transcription":{"utterances":[{"start":1,"text":"a","words":[{"word":"a","start":"bad"}]}]}}}`,
	`{"created_at":"garbage","result":{"transcription":{"utterances":[{"start":1,"text":"a"}]}}}`,
	`{"result":{"transcription":{"utterances":[{"start":-5,"end":1e300,"text":" x\ty ","channel":-1},{"start":-5,"text":"same start","channel":-2}]}}}`,
	`[`, `[]`, `null`, `"x"`, `5`, ``, `{}`,
}

// TestTranscriptTextMatchesReference compares TranscriptText with the full-record reference on
// the file sink's cases, api's job records and the 2-hour result.
func TestTranscriptTextMatchesReference(t *testing.T) {
	for _, c := range transcriptCases {
		checkTranscriptText(t, []byte(c))
	}
	files, _ := filepath.Glob("../api/testdata/job_*.json")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		checkTranscriptText(t, b)
		var job api.Job
		if err := json.Unmarshal(b, &job); err == nil && job.Result != nil {
			checkTranscriptText(t, job.Result)
		}
	}
	res := apitest.Result(1, 2*time.Hour, 20000)
	data, err := json.Marshal(apitest.JobRecord("8d0f7a52-31c4-4f0e-9b5e-6a1f3e2c9d47", res))
	if err != nil {
		t.Fatal(err)
	}
	checkTranscriptText(t, data)
	if text, _ := TranscriptText(data); strings.Count(text, "\n") != len(res.Transcription.Utterances) {
		t.Errorf("%d lines for %d utterances", strings.Count(text, "\n"), len(res.Transcription.Utterances))
	}
}

func FuzzTranscriptText(f *testing.F) {
	for _, c := range transcriptCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkTranscriptText(t, data)
	})
}
