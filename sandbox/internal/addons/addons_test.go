package addons

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
)

// everything switches on every add-on.
func everything() *api.PreRecordedRequest {
	on := api.Bool(true)
	return &api.PreRecordedRequest{
		AudioURL:                 "http://x/a.wav",
		Subtitles:                on,
		SubtitlesConfig:          &api.SubtitlesConfig{Formats: []string{"srt", "vtt"}},
		Diarization:              on,
		Translation:              on,
		TranslationConfig:        &api.TranslationConfig{TargetLanguages: []string{"fr", "de"}},
		Summarization:            on,
		Moderation:               on,
		NamedEntityRecognition:   on,
		Chapterization:           on,
		NameConsistency:          on,
		CustomSpelling:           on,
		CustomSpellingConfig:     &api.CustomSpellingConfig{SpellingDictionary: map[string][]string{"NASA": {"nasa"}}},
		StructuredDataExtraction: on,
		SentimentAnalysis:        on,
		AudioToLLM:               on,
		AudioToLLMConfig:         &api.AudioToLLMConfig{Prompts: []string{"Summarize", "List names"}},
		Sentences:                on,
		DisplayMode:              on,
		PunctuationEnhanced:      on,
		Extra:                    api.Extra{"speaker_reidentification": json.RawMessage("true")},
	}
}

func TestApplyComputedAddons(t *testing.T) {
	in := transcript(
		utt(0, "I work at nasa. It is great.", w("I", 0, 0.2), w(" work", 0.3, 0.6), w(" at", 0.7, 0.8),
			w(" nasa.", 0.9, 1.4), w(" It", 2, 2.2), w(" is", 2.3, 2.4), w(" great.", 2.5, 3)),
		utt(1, "Sounds fun.", w("Sounds", 3.5, 3.9), w(" fun.", 4, 4.5)),
	)
	before, _ := json.Marshal(in)
	res, err := Apply(context.Background(), everything(), in, fixedClock())
	if err != nil {
		t.Fatal(err)
	}
	after, _ := json.Marshal(in)
	if string(before) != string(after) {
		t.Fatal("Apply changed its input")
	}

	tr := res.Transcription
	if tr.FullTranscript != "I work at NASA. It is great. Sounds fun." {
		t.Errorf("custom spelling not applied to the full transcript: %q", tr.FullTranscript)
	}
	wantSentences := []string{"I work at NASA.", "It is great.", "Sounds fun."}
	checkEnvelope(t, "sentences", res.Sentences.Success, res.Sentences.IsEmpty, res.Sentences.Error, true, false)
	if strings.Join(res.Sentences.Results, "|") != strings.Join(wantSentences, "|") {
		t.Errorf("sentences %q", res.Sentences.Results)
	}
	if len(tr.Sentences) != 1 || strings.Join(tr.Sentences[0].Results, "|") != strings.Join(wantSentences, "|") {
		t.Errorf("transcription.sentences %+v", tr.Sentences)
	}
	if len(tr.Subtitles) != 2 || tr.Subtitles[0].Format != "srt" || tr.Subtitles[1].Format != "vtt" ||
		!strings.Contains(tr.Subtitles[0].Subtitles, "I work at NASA. It is great.\n") {
		t.Errorf("subtitles %+v", tr.Subtitles)
	}
	if got := strings.Join(res.DisplayMode.Results, "|"); got != "Speaker 0: I work at NASA. It is great.|Speaker 1: Sounds fun." {
		t.Errorf("display mode %q", got)
	}
	if len(res.Diarization.Results) != 2 || *res.Diarization.Results[1].Speaker != 1 {
		t.Errorf("diarization %+v", res.Diarization.Results)
	}
	if res.Summarization.Results == "" || !res.Summarization.Success {
		t.Errorf("summarization %+v", res.Summarization)
	}
	if res.NameConsistency.Results != tr.FullTranscript || !res.NameConsistency.Success {
		t.Errorf("name consistency %+v", res.NameConsistency)
	}
	if chapters := res.Chapterization.Results.Chapters; len(chapters) != 1 {
		t.Errorf("chapterization %+v", res.Chapterization.Results)
	}
	if res.Metadata != nil {
		t.Error("metadata is the caller's")
	}

	// Deterministic with a fixed clock.
	again, _ := Apply(context.Background(), everything(), in, fixedClock())
	a, _ := json.Marshal(res)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Error("two runs differ")
	}
}

func checkEnvelope(t *testing.T, name string, success, empty bool, e *api.AddonError, wantSuccess, wantEmpty bool) {
	t.Helper()
	if success != wantSuccess || empty != wantEmpty || (e == nil) != wantSuccess {
		t.Errorf("%s: success %v is_empty %v error %+v; want success %v is_empty %v", name, success, empty, e, wantSuccess, wantEmpty)
	}
}

func checkNotAvailable(t *testing.T, name string, success, empty bool, e *api.AddonError) {
	t.Helper()
	checkEnvelope(t, name, success, empty, e, false, true)
	if e != nil && (e.StatusCode != 501 || e.Exception != "NotAvailableInSandbox" ||
		e.Message != name+" needs a model the sandbox does not have") {
		t.Errorf("%s: error %+v", name, e)
	}
}

func TestApplyModelAddonsFail(t *testing.T) {
	res, err := Apply(context.Background(), everything(), transcript(utt(0, "Hello.", w("Hello.", 0, 1))), fixedClock())
	if err != nil {
		t.Fatal(err)
	}
	checkNotAvailable(t, "translation", res.Translation.Success, res.Translation.IsEmpty, res.Translation.Error)
	if n := len(res.Translation.Results); n != 2 {
		t.Fatalf("%d translation entries, want 2", n)
	}
	for i, lang := range []string{"fr", "de"} {
		r := res.Translation.Results[i]
		if len(r.Languages) != 1 || r.Languages[0] != lang || r.Utterances == nil {
			t.Errorf("translation entry %d: %+v", i, r)
		}
		checkNotAvailable(t, "translation", false, true, r.Error)
	}
	checkNotAvailable(t, "named_entity_recognition", res.NamedEntityRecognition.Success,
		res.NamedEntityRecognition.IsEmpty, res.NamedEntityRecognition.Error)
	// Entities in results, as the service sends them; no entity member (provider-facts.md).
	ner, _ := json.Marshal(res.NamedEntityRecognition)
	if want := `{"success":false,"is_empty":true,"exec_time":0,"error":{"status_code":501,` +
		`"exception":"NotAvailableInSandbox","message":"named_entity_recognition needs a model the sandbox does not have"},` +
		`"results":[]}`; string(ner) != want {
		t.Errorf("named_entity_recognition\n got %s\nwant %s", ner, want)
	}
	for name, a := range map[string]*api.Addon[string]{
		"sentiment_analysis":         res.SentimentAnalysis,
		"moderation":                 res.Moderation,
		"structured_data_extraction": res.StructuredDataExtraction,
		"speaker_reidentification":   res.SpeakerReidentification,
	} {
		if a == nil {
			t.Errorf("%s missing", name)
			continue
		}
		checkNotAvailable(t, name, a.Success, a.IsEmpty, a.Error)
	}
	checkNotAvailable(t, "audio_to_llm", res.AudioToLLM.Success, res.AudioToLLM.IsEmpty, res.AudioToLLM.Error)
	if n := len(res.AudioToLLM.Results); n != 2 {
		t.Fatalf("%d audio_to_llm entries, want 2", n)
	}
	for i, p := range []string{"Summarize", "List names"} {
		e := res.AudioToLLM.Results[i]
		checkNotAvailable(t, "audio_to_llm", e.Success, e.IsEmpty, e.Error)
		if e.Results.Prompt != p || e.Results.Response != "" {
			t.Errorf("audio_to_llm entry %d: %+v", i, e.Results)
		}
	}

	// The wire form of a failed envelope.
	b, err := json.Marshal(res.Moderation)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"success":false,"is_empty":true,"exec_time":0,"error":{"status_code":501,"exception":"NotAvailableInSandbox","message":"moderation needs a model the sandbox does not have"},"results":""}`
	if string(b) != want {
		t.Errorf("moderation JSON\ngot  %s\nwant %s", b, want)
	}
}

func TestApplyOnlyWhatIsAsked(t *testing.T) {
	res, err := Apply(context.Background(), &api.PreRecordedRequest{Sentences: api.Bool(true), Diarization: api.Bool(false)},
		transcript(utt(0, "Hi.", w("Hi.", 0, 1))), fixedClock())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	for _, absent := range []string{`"diarization"`, `"translation"`, `"summarization"`, `"subtitles"`, `"speaker_reidentification"`} {
		if strings.Contains(string(b), absent) {
			t.Errorf("%s present in %s", absent, b)
		}
	}
	if res.Sentences == nil {
		t.Error("sentences missing")
	}
}

func TestApplyEmptyTranscript(t *testing.T) {
	for name, tr := range map[string]*api.Transcription{"nil": nil, "zero": {}, "blank utterance": transcript(utt(0, " "))} {
		t.Run(name, func(t *testing.T) {
			res, err := Apply(context.Background(), everything(), tr, fixedClock())
			if err != nil {
				t.Fatal(err)
			}
			checkEnvelope(t, "sentences", res.Sentences.Success, res.Sentences.IsEmpty, res.Sentences.Error, true, true)
			checkEnvelope(t, "display_mode", res.DisplayMode.Success, res.DisplayMode.IsEmpty, res.DisplayMode.Error, true, true)
			checkEnvelope(t, "summarization", res.Summarization.Success, res.Summarization.IsEmpty, res.Summarization.Error, true, true)
			checkEnvelope(t, "chapterization", res.Chapterization.Success, res.Chapterization.IsEmpty, res.Chapterization.Error, true, true)
			checkEnvelope(t, "name_consistency", res.NameConsistency.Success, res.NameConsistency.IsEmpty, res.NameConsistency.Error, true, true)
			if name != "blank utterance" {
				checkEnvelope(t, "diarization", res.Diarization.Success, res.Diarization.IsEmpty, res.Diarization.Error, true, true)
			}
			if got, _ := json.Marshal(res.Chapterization.Results); string(got) != `{"chapters":[]}` ||
				res.Sentences.Results == nil || res.DisplayMode.Results == nil {
				t.Errorf("empty results must be empty lists: %s %v %v", got, res.Sentences.Results, res.DisplayMode.Results)
			}
			subs := res.Transcription.Subtitles
			if len(subs) != 2 || subs[0].Subtitles != "" || subs[1].Subtitles != "WEBVTT\n" {
				t.Errorf("subtitles %+v", subs)
			}
			if _, err := json.Marshal(res); err != nil {
				t.Errorf("encode: %v", err)
			}
		})
	}
}

func TestApplyCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Apply(ctx, everything(), transcript(utt(0, "Hi.", w("Hi.", 0, 1))), Options{})
	if !errors.Is(err, context.Canceled) || res != nil {
		t.Errorf("got %v, %v; want context.Canceled", res, err)
	}
	// A request that switches nothing on has nothing to cancel.
	if res, err := Apply(ctx, nil, nil, Options{}); err != nil || res.Transcription == nil {
		t.Errorf("got %v, %v", res, err)
	}
}

func TestExecTimeMeasured(t *testing.T) {
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	opts := Options{Now: func() time.Time { now = now.Add(250 * time.Millisecond); return now }}
	a := SummarizationAddon(transcript(utt(0, "Hi.", w("Hi.", 0, 1))), nil, opts)
	if a.ExecTime != 0.25 {
		t.Errorf("exec_time %v, want 0.25", a.ExecTime)
	}
}

func TestApplyLive(t *testing.T) {
	on := api.Bool(true)
	req := &api.LiveRequest{
		RealtimeProcessing: &api.RealtimeProcessing{
			CustomSpelling:       on,
			CustomSpellingConfig: &api.CustomSpellingConfig{SpellingDictionary: map[string][]string{"Go": {"go"}}},
			Translation:          on,
			TranslationConfig:    &api.TranslationConfig{TargetLanguages: []string{"es"}},
			SentimentAnalysis:    on,
		},
		PostProcessing: &api.PostProcessing{
			Summarization:       on,
			SummarizationConfig: &api.SummarizationConfig{Type: "bullet_points"},
			Chapterization:      on,
		},
	}
	res, err := ApplyLive(context.Background(), req, transcript(utt(0, "we go now.", w("we", 0, 0.3), w(" go", 0.4, 0.6), w(" now.", 0.7, 1))), fixedClock())
	if err != nil {
		t.Fatal(err)
	}
	if res.Summarization.Results != "- we Go now." {
		t.Errorf("summary %q", res.Summarization.Results)
	}
	if res.Chapterization == nil || res.Translation == nil || len(res.Translation.Results) != 1 || res.SentimentAnalysis == nil {
		t.Errorf("live add-ons missing: %+v", res)
	}
	if res.NamedEntityRecognition != nil || res.Sentences != nil || res.Transcription.Subtitles != nil {
		t.Error("add-ons that were not asked for are present")
	}
	if res, err := ApplyLive(context.Background(), nil, nil, Options{}); err != nil || res == nil {
		t.Errorf("nil request: %v, %v", res, err)
	}
}
