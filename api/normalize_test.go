package api

import (
	"reflect"
	"testing"

	"github.com/scribehook/scribehook/internal/testjson"
)

func TestNormalize(t *testing.T) {
	const base = `"audio_url":"https://example.com/a.wav"`
	cases := []struct {
		name string
		in   string // members after audio_url
		want string // whole request after Normalize
	}{
		{"nothing deprecated", `"language_config":{"languages":["en"]},"callback":true,"callback_config":{"url":"https://h.example.com/"}`,
			`{` + base + `,"callback":true,"callback_config":{"url":"https://h.example.com/"},"language_config":{"languages":["en"]}}`},
		{"minimal untouched", ``, `{` + base + `}`},
		{"language", `"language":"fr"`,
			`{` + base + `,"language":"fr","language_config":{"languages":["fr"]}}`},
		{"detect_language", `"detect_language":true`,
			`{` + base + `,"detect_language":true,"language_config":{"languages":[]}}`},
		{"detect_language false alone", `"detect_language":false`,
			`{` + base + `,"detect_language":false}`},
		{"enable_code_switching", `"enable_code_switching":true`,
			`{` + base + `,"enable_code_switching":true,"language_config":{"languages":[],"code_switching":true}}`},
		{"code switching languages", `"enable_code_switching":true,"code_switching_config":{"languages":["en","fr"]}`,
			`{` + base + `,"enable_code_switching":true,"code_switching_config":{"languages":["en","fr"]},"language_config":{"languages":["en","fr"],"code_switching":true}}`},
		{"code switching languages win over language", `"language":"fr","code_switching_config":{"languages":["en","fr"]}`,
			`{` + base + `,"code_switching_config":{"languages":["en","fr"]},"language":"fr","language_config":{"languages":["en","fr"]}}`},
		{"explicit language_config kept", `"language":"fr","language_config":{"languages":["en"]}`,
			`{` + base + `,"language":"fr","language_config":{"languages":["en"]}}`},
		{"explicit empty languages kept", `"language":"fr","language_config":{"languages":[]}`,
			`{` + base + `,"language":"fr","language_config":{"languages":[]}}`},
		{"absent languages filled", `"language":"fr","enable_code_switching":false,"language_config":{"code_switching":true}`,
			`{` + base + `,"enable_code_switching":false,"language":"fr","language_config":{"languages":["fr"],"code_switching":true}}`},
		{"absent code_switching filled", `"enable_code_switching":true,"language_config":{"languages":["en"]}`,
			`{` + base + `,"enable_code_switching":true,"language_config":{"languages":["en"],"code_switching":true}}`},
		{"callback_url", `"callback_url":"https://h.example.com/cb"`,
			`{` + base + `,"callback_url":"https://h.example.com/cb","callback":true,"callback_config":{"url":"https://h.example.com/cb","method":"POST"}}`},
		{"callback_url with callback false", `"callback_url":"https://h.example.com/cb","callback":false`,
			`{` + base + `,"callback_url":"https://h.example.com/cb","callback":false,"callback_config":{"url":"https://h.example.com/cb","method":"POST"}}`},
		{"callback_url fills url only", `"callback_url":"https://h.example.com/cb","callback_config":{"method":"PUT","x":1}`,
			`{` + base + `,"callback_url":"https://h.example.com/cb","callback":true,"callback_config":{"url":"https://h.example.com/cb","method":"PUT","x":1}}`},
		{"callback_url fills url and method", `"callback_url":"https://h.example.com/cb","callback_config":{}`,
			`{` + base + `,"callback_url":"https://h.example.com/cb","callback":true,"callback_config":{"url":"https://h.example.com/cb","method":"POST"}}`},
		{"explicit callback_config kept", `"callback_url":"https://a.example.com/","callback_config":{"url":"https://b.example.com/"}`,
			`{` + base + `,"callback_url":"https://a.example.com/","callback":true,"callback_config":{"url":"https://b.example.com/"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := "{" + base
			if tc.in != "" {
				body += "," + tc.in
			}
			body += "}"
			r := decodeJSON[PreRecordedRequest](t, body)
			before := sentencesOf(t, r.Validate())
			r.Normalize()
			if got := string(testjson.Marshal(t, r)); got != tc.want {
				t.Errorf("Normalize(%s)\n got %s\nwant %s", body, got, tc.want)
			}
			// Idempotent.
			again := r
			again.Normalize()
			if got := string(testjson.Marshal(t, again)); got != tc.want {
				t.Errorf("second Normalize changed the request: %s", got)
			}
			// Validate says the same before and after.
			if after := sentencesOf(t, r.Validate()); !reflect.DeepEqual(before, after) {
				t.Errorf("Validate before Normalize %q, after %q", before, after)
			}
		})
	}
}

func TestNormalizeDoesNotAliasDeprecatedSlices(t *testing.T) {
	r := PreRecordedRequest{AudioURL: "https://example.com/a", CodeSwitchingConfig: &CodeSwitchingConfig{Languages: []string{"en", "fr"}}}
	r.Normalize()
	r.LanguageConfig.Languages[0] = "de"
	if r.CodeSwitchingConfig.Languages[0] != "en" {
		t.Error("language_config.languages shares code_switching_config.languages")
	}
}

func TestEffectiveHelpers(t *testing.T) {
	var cb *CallbackConfig
	if cb.EffectiveMethod() != "POST" || (&CallbackConfig{Method: "PUT"}).EffectiveMethod() != "PUT" {
		t.Error("EffectiveMethod")
	}
	var sc *SubtitlesConfig
	if !reflect.DeepEqual(sc.EffectiveFormats(), []string{"srt"}) ||
		!reflect.DeepEqual((&SubtitlesConfig{Formats: []string{"vtt", "srt"}}).EffectiveFormats(), []string{"vtt", "srt"}) {
		t.Error("EffectiveFormats")
	}
	var sum *SummarizationConfig
	if sum.EffectiveType() != "general" || (&SummarizationConfig{Type: "concise"}).EffectiveType() != "concise" {
		t.Error("EffectiveType")
	}
	var tr *TranslationConfig
	if tr.EffectiveModel() != "base" || (&TranslationConfig{Model: "enhanced"}).EffectiveModel() != "enhanced" {
		t.Error("EffectiveModel")
	}
}

func TestLiveSettings(t *testing.T) {
	defaults := LiveSettings{
		Encoding: "wav/pcm", BitDepth: 16, SampleRate: 16000, Channels: 1, Model: "solaria-1",
		Endpointing: 0.05, MaximumDurationWithoutEndpointing: 5, SpeechThreshold: 0.6,
	}
	cases := []struct {
		name string
		body string
		want LiveSettings
	}{
		{"empty", `{}`, defaults},
		{"alaw defaults to 8 bit", `{"encoding":"wav/alaw"}`, func() LiveSettings {
			s := defaults
			s.Encoding, s.BitDepth = "wav/alaw", 8
			return s
		}()},
		{"ulaw defaults to 8 bit", `{"encoding":"wav/ulaw","sample_rate":8000}`, func() LiveSettings {
			s := defaults
			s.Encoding, s.BitDepth, s.SampleRate = "wav/ulaw", 8, 8000
			return s
		}()},
		{"everything set", `{"encoding":"wav/pcm","bit_depth":24,"sample_rate":48000,"channels":2,"model":"<default_model>","endpointing":0.3,"maximum_duration_without_endpointing":30,"pre_processing":{"audio_enhancer":true,"speech_threshold":0.2}}`,
			LiveSettings{Encoding: "wav/pcm", BitDepth: 24, SampleRate: 48000, Channels: 2, Model: "<default_model>",
				Endpointing: 0.3, MaximumDurationWithoutEndpointing: 30, SpeechThreshold: 0.2, AudioEnhancer: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := decodeJSON[LiveRequest](t, tc.body)
			if got := r.Settings(); got != tc.want {
				t.Errorf("Settings() = %+v, want %+v", got, tc.want)
			}
		})
	}
	var nilReq *LiveRequest
	if nilReq.Settings() != defaults {
		t.Error("nil request does not give the defaults")
	}
	if got := defaults.BytesPerSecond(); got != 32000 {
		t.Errorf("BytesPerSecond = %d, want 32000", got)
	}
	s := LiveSettings{BitDepth: 8, SampleRate: 8000, Channels: 2}
	if s.BytesPerSample() != 1 || s.BytesPerSecond() != 16000 {
		t.Errorf("8-bit stereo: %d bytes per sample, %d per second", s.BytesPerSample(), s.BytesPerSecond())
	}
}

func TestLiveWithDefaults(t *testing.T) {
	r := decodeJSON[LiveRequest](t, `{"encoding":"wav/ulaw","channels":2,"pre_processing":{"audio_enhancer":true},"callback":true,"callback_config":{"url":"https://h.example.com/"},"x_new":1}`)
	orig := string(testjson.Marshal(t, r))
	d := r.WithDefaults()
	if string(testjson.Marshal(t, r)) != orig {
		t.Fatalf("WithDefaults changed its receiver: %s", string(testjson.Marshal(t, r)))
	}
	want := `{"encoding":"wav/ulaw","bit_depth":8,"sample_rate":16000,"channels":2,"model":"solaria-1","endpointing":0.05,"maximum_duration_without_endpointing":5,"pre_processing":{"audio_enhancer":true,"speech_threshold":0.6},"callback":true,"callback_config":{"url":"https://h.example.com/"},"x_new":1}`
	if got := string(testjson.Marshal(t, d)); got != want {
		t.Errorf("WithDefaults()\n got %s\nwant %s", got, want)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
	var nilReq *LiveRequest
	nd := nilReq.WithDefaults()
	if err := nd.Validate(); err != nil {
		t.Errorf("defaults of nil do not validate: %v", err)
	}
}
