package api

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// sentencesOf returns the sentences of a validation error, nil for nil, and fails the test on
// any other error.
func sentencesOf(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve ValidationErrors
	if !errors.As(err, &ve) {
		t.Fatalf("error %v (%T) is not ValidationErrors", err, err)
	}
	if !errors.Is(err, ErrValidation) {
		t.Fatalf("errors.Is(%v, ErrValidation) is false", err)
	}
	return ve.Sentences()
}

// metadataOfLength builds a custom_metadata object whose compact text has n characters, with
// two-byte characters so that a byte count would be wrong.
func metadataOfLength(n int) string {
	return `{"k":"` + strings.Repeat("é", n-8) + `"}`
}

type ruleCase struct {
	name string
	body string // members added to a valid base request
	want []string
}

func TestPreRecordedValidate(t *testing.T) {
	cases := []ruleCase{
		{"minimal", ``, nil},

		// audio_url
		{"audio_url localhost with port", `"audio_url":"http://localhost:8080/a.wav"`, nil},
		{"audio_url missing", `"audio_url":""`, []string{"audio_url is required"}},
		{"audio_url ftp", `"audio_url":"ftp://example.com/a.wav"`,
			[]string{`audio_url must be an absolute http or https URL with a host (got "ftp://example.com/a.wav")`}},
		{"audio_url relative", `"audio_url":"/a.wav"`,
			[]string{`audio_url must be an absolute http or https URL with a host (got "/a.wav")`}},
		{"audio_url no host", `"audio_url":"http:///a.wav"`,
			[]string{`audio_url must be an absolute http or https URL with a host (got "http:///a.wav")`}},
		{"audio_url opaque", `"audio_url":"http:a.wav"`,
			[]string{`audio_url must be an absolute http or https URL with a host (got "http:a.wav")`}},

		// language codes
		{"language valid", `"language":"haw"`, nil},
		{"language unknown", `"language":"xx"`, []string{`language must be a supported language code (got "xx")`}},
		{"language upper case", `"language":"EN"`, []string{`language must be a supported language code (got "EN")`}},
		{"language_config valid", `"language_config":{"languages":["en","fr"],"code_switching":true}`, nil},
		{"language_config unknown", `"language_config":{"languages":["en","zz"]}`,
			[]string{`language_config.languages[1] must be a supported language code (got "zz")`}},
		{"code_switching_config unknown", `"code_switching_config":{"languages":["xx"]}`,
			[]string{`code_switching_config.languages[0] must be a supported language code (got "xx")`}},
		{"target language unknown", `"translation":true,"translation_config":{"target_languages":["de","q"]}`,
			[]string{`translation_config.target_languages[1] must be a supported language code (got "q")`}},
		{"vocabulary language unknown", `"custom_vocabulary_config":{"vocabulary":[{"value":"a","language":"fr"},{"value":"b","language":"klingon"}]}`,
			[]string{`custom_vocabulary_config.vocabulary[1].language must be a supported language code (got "klingon")`}},

		// subtitles_config
		{"subtitles valid", `"subtitles":true,"subtitles_config":{"formats":["srt","vtt"],"minimum_duration":0,"maximum_duration":30,"maximum_characters_per_row":1,"maximum_rows_per_caption":5,"style":"compliance"}`, nil},
		{"subtitles bounds low", `"subtitles_config":{"maximum_duration":1,"maximum_rows_per_caption":1,"style":"default"}`, nil},
		{"formats empty", `"subtitles_config":{"formats":[]}`,
			[]string{"subtitles_config.formats must contain at least one format"}},
		{"formats unknown", `"subtitles_config":{"formats":["srt","ass"]}`,
			[]string{`subtitles_config.formats[1] must be one of srt, vtt (got "ass")`}},
		{"formats repeated", `"subtitles_config":{"formats":["vtt","srt","vtt"]}`,
			[]string{`subtitles_config.formats[2] must not repeat a format (got "vtt")`}},
		{"style unknown", `"subtitles_config":{"style":"fancy"}`,
			[]string{`subtitles_config.style must be one of default, compliance (got "fancy")`}},
		{"maximum_duration high", `"subtitles_config":{"maximum_duration":31}`,
			[]string{"subtitles_config.maximum_duration must be between 1 and 30 (got 31)"}},
		{"maximum_duration low", `"subtitles_config":{"maximum_duration":0.5}`,
			[]string{"subtitles_config.maximum_duration must be between 1 and 30 (got 0.5)"}},
		{"minimum_duration negative", `"subtitles_config":{"minimum_duration":-1}`,
			[]string{"subtitles_config.minimum_duration must be at least 0 (got -1)"}},
		{"minimum above maximum", `"subtitles_config":{"minimum_duration":5,"maximum_duration":3}`,
			[]string{"subtitles_config.minimum_duration must not exceed subtitles_config.maximum_duration (got 5 > 3)"}},
		{"minimum equals maximum", `"subtitles_config":{"minimum_duration":3,"maximum_duration":3}`, nil},
		{"characters per row zero", `"subtitles_config":{"maximum_characters_per_row":0}`,
			[]string{"subtitles_config.maximum_characters_per_row must be at least 1 (got 0)"}},
		{"rows per caption high", `"subtitles_config":{"maximum_rows_per_caption":6}`,
			[]string{"subtitles_config.maximum_rows_per_caption must be between 1 and 5 (got 6)"}},
		{"rows per caption zero", `"subtitles_config":{"maximum_rows_per_caption":0}`,
			[]string{"subtitles_config.maximum_rows_per_caption must be between 1 and 5 (got 0)"}},

		// callback
		{"callback config valid", `"callback":true,"callback_config":{"url":"https://hooks.example.com/x","method":"PUT"}`, nil},
		{"callback with callback_url", `"callback":true,"callback_url":"https://hooks.example.com/x"`, nil},
		{"callback_url alone", `"callback_url":"https://hooks.example.com/x"`, nil},
		{"callback config without callback", `"callback_config":{"url":"https://hooks.example.com/x"}`, nil},
		{"callback method unknown", `"callback_config":{"url":"https://h.example.com/","method":"GET"}`,
			[]string{`callback_config.method must be one of POST, PUT (got "GET")`}},
		{"callback method lower case", `"callback_config":{"url":"https://h.example.com/","method":"post"}`,
			[]string{`callback_config.method must be one of POST, PUT (got "post")`}},
		{"callback url missing", `"callback":true`,
			[]string{"callback_config.url is required when callback is true"}},
		{"callback url empty config", `"callback":true,"callback_config":{"method":"POST"}`,
			[]string{"callback_config.url is required when callback is true"}},
		{"callback url invalid", `"callback":true,"callback_config":{"url":"ftp://h.example.com/"}`,
			[]string{`callback_config.url must be an absolute http or https URL with a host (got "ftp://h.example.com/")`}},
		{"callback_url invalid", `"callback_url":"not a url"`,
			[]string{`callback_url must be an absolute http or https URL with a host (got "not a url")`}},
		{"callback false with callback_url", `"callback":false,"callback_url":"https://h.example.com/"`,
			[]string{"callback must be true when callback_url is given (got false)"}},
		{"callback urls differ", `"callback_url":"https://a.example.com/","callback_config":{"url":"https://b.example.com/"}`,
			[]string{`callback_url must match callback_config.url when both are given (got "https://a.example.com/" and "https://b.example.com/")`}},

		// summarization
		{"summarization valid", `"summarization":true,"summarization_config":{"type":"bullet_points"}`, nil},
		{"summarization concise", `"summarization_config":{"type":"concise"}`, nil},
		{"summarization unknown", `"summarization_config":{"type":"long"}`,
			[]string{`summarization_config.type must be one of general, bullet_points, concise (got "long")`}},

		// translation
		{"translation valid", `"translation":true,"translation_config":{"target_languages":["fr"],"model":"enhanced"}`, nil},
		{"translation without config", `"translation":true`,
			[]string{"translation_config.target_languages must contain at least one language when translation is true"}},
		{"translation empty targets", `"translation":true,"translation_config":{"target_languages":[]}`,
			[]string{"translation_config.target_languages must contain at least one language when translation is true"}},
		{"translation config while off", `"translation_config":{"target_languages":[]}`, nil},
		{"translation model unknown", `"translation_config":{"target_languages":["fr"],"model":"turbo"}`,
			[]string{`translation_config.model must be one of base, enhanced (got "turbo")`}},

		// custom vocabulary
		{"vocabulary valid", `"custom_vocabulary":true,"custom_vocabulary_config":{"vocabulary":["a",{"value":"b","intensity":0},{"value":"c","intensity":1}],"default_intensity":1}`, nil},
		{"vocabulary intensity high", `"custom_vocabulary_config":{"vocabulary":["a","b",{"value":"c","intensity":1.5}]}`,
			[]string{"custom_vocabulary_config.vocabulary[2].intensity must be between 0 and 1 (got 1.5)"}},
		{"vocabulary default intensity negative", `"custom_vocabulary_config":{"vocabulary":["a"],"default_intensity":-0.1}`,
			[]string{"custom_vocabulary_config.default_intensity must be between 0 and 1 (got -0.1)"}},
		{"vocabulary empty value", `"custom_vocabulary_config":{"vocabulary":[{"value":" "}]}`,
			[]string{"custom_vocabulary_config.vocabulary[0].value must not be empty"}},
		{"vocabulary empty string", `"custom_vocabulary_config":{"vocabulary":["ok",""]}`,
			[]string{"custom_vocabulary_config.vocabulary[1] must not be empty"}},
		{"vocabulary flag without terms", `"custom_vocabulary":true`,
			[]string{"custom_vocabulary_config.vocabulary must contain at least one term when custom_vocabulary is true"}},
		{"vocabulary list valid", `"custom_vocabulary":["a",{"value":"b","intensity":0.3}]`, nil},
		{"vocabulary list empty", `"custom_vocabulary":[]`,
			[]string{"custom_vocabulary must contain at least one term when given as a list"}},
		{"vocabulary list intensity", `"custom_vocabulary":[{"value":"b","intensity":2}]`,
			[]string{"custom_vocabulary[0].intensity must be between 0 and 1 (got 2)"}},

		// diarization
		{"diarization valid", `"diarization":true,"diarization_config":{"number_of_speakers":1,"min_speakers":0,"max_speakers":0}`, nil},
		{"diarization min equals max", `"diarization_config":{"min_speakers":2,"max_speakers":2}`, nil},
		{"speakers zero", `"diarization_config":{"number_of_speakers":0}`,
			[]string{"diarization_config.number_of_speakers must be at least 1 (got 0)"}},
		{"min speakers negative", `"diarization_config":{"min_speakers":-1}`,
			[]string{"diarization_config.min_speakers must be at least 0 (got -1)"}},
		{"max speakers negative", `"diarization_config":{"max_speakers":-2}`,
			[]string{"diarization_config.max_speakers must be at least 0 (got -2)"}},
		{"min above max", `"diarization_config":{"min_speakers":3,"max_speakers":2}`,
			[]string{"diarization_config.min_speakers must not exceed diarization_config.max_speakers (got 3 > 2)"}},

		// custom_metadata
		{"metadata object", `"custom_metadata":{"a":[1,{"b":null}]}`, nil},
		{"metadata null", `"custom_metadata":null`, nil},
		{"metadata array", `"custom_metadata":[1]`, []string{"custom_metadata must be a JSON object (got array)"}},
		{"metadata string", `"custom_metadata":"x"`, []string{"custom_metadata must be a JSON object (got string)"}},
		{"metadata number", `"custom_metadata":12`, []string{"custom_metadata must be a JSON object (got number)"}},
		{"metadata at limit", `"custom_metadata":` + metadataOfLength(2000), nil},
		{"metadata at limit with spaces", `"custom_metadata":` + strings.Replace(metadataOfLength(2000), ":", " :  ", 1), nil},
		{"metadata over limit", `"custom_metadata":` + metadataOfLength(2001),
			[]string{"custom_metadata must be at most 2000 characters when serialised (got 2001)"}},

		// audio_to_llm, structured data extraction, custom spelling
		{"audio_to_llm valid", `"audio_to_llm":true,"audio_to_llm_config":{"prompts":["Who speaks?"]}`, nil},
		{"audio_to_llm without prompts", `"audio_to_llm":true`,
			[]string{"audio_to_llm_config.prompts must contain at least one prompt when audio_to_llm is true"}},
		{"audio_to_llm empty prompts", `"audio_to_llm":true,"audio_to_llm_config":{"prompts":[]}`,
			[]string{"audio_to_llm_config.prompts must contain at least one prompt when audio_to_llm is true"}},
		{"audio_to_llm blank prompt", `"audio_to_llm_config":{"prompts":["ok","  "]}`,
			[]string{"audio_to_llm_config.prompts[1] must not be empty"}},
		{"structured valid", `"structured_data_extraction":true,"structured_data_extraction_config":{"classes":["person"]}`, nil},
		{"structured without classes", `"structured_data_extraction":true`,
			[]string{"structured_data_extraction_config.classes must contain at least one class when structured_data_extraction is true"}},
		{"structured blank class", `"structured_data_extraction_config":{"classes":[""]}`,
			[]string{"structured_data_extraction_config.classes[0] must not be empty"}},
		{"spelling valid", `"custom_spelling":true,"custom_spelling_config":{"spelling_dictionary":{"SQL":["sequel"]}}`, nil},
		{"spelling without dictionary", `"custom_spelling":true`,
			[]string{"custom_spelling_config.spelling_dictionary must contain at least one entry when custom_spelling is true"}},
		{"spelling empty dictionary", `"custom_spelling":true,"custom_spelling_config":{"spelling_dictionary":{}}`,
			[]string{"custom_spelling_config.spelling_dictionary must contain at least one entry when custom_spelling is true"}},

		// deprecated language fields against language_config
		{"language agrees", `"language":"fr","language_config":{"languages":["fr"]}`, nil},
		{"language conflicts", `"language":"fr","language_config":{"languages":["en"]}`,
			[]string{`language must match language_config.languages when both are given (got "fr" and ["en"])`}},
		{"language against detect", `"language":"fr","language_config":{"languages":[]}`,
			[]string{`language must match language_config.languages when both are given (got "fr" and [])`}},
		{"language with unset languages", `"language":"fr","language_config":{"code_switching":false}`, nil},
		{"detect with language", `"detect_language":true,"language":"fr"`,
			[]string{`detect_language must not be true when language is given (got language "fr")`}},
		{"detect against languages", `"detect_language":true,"language_config":{"languages":["en"]}`,
			[]string{`detect_language must not be true when language_config.languages is given (got ["en"])`}},
		{"detect agrees", `"detect_language":true,"language_config":{"languages":[]}`, nil},
		{"detect false with language", `"detect_language":false,"language":"fr"`, nil},
		{"code switching conflicts", `"enable_code_switching":true,"language_config":{"languages":[],"code_switching":false}`,
			[]string{"enable_code_switching must match language_config.code_switching when both are given (got true and false)"}},
		{"code switching agrees", `"enable_code_switching":true,"language_config":{"code_switching":true}`, nil},
		{"code switching languages agree", `"code_switching_config":{"languages":["en","fr"]},"language_config":{"languages":["fr","en"]}`, nil},
		{"code switching languages conflict", `"code_switching_config":{"languages":["en","fr"]},"language_config":{"languages":["en"]}`,
			[]string{`code_switching_config.languages must match language_config.languages when both are given (got ["en", "fr"] and ["en"])`}},
		{"language outside code switching", `"language":"de","code_switching_config":{"languages":["en","fr"]}`,
			[]string{`language must be one of code_switching_config.languages when both are given (got "de", not in ["en", "fr"])`}},
		{"language inside code switching", `"language":"fr","code_switching_config":{"languages":["en","fr"]}`, nil},

		// unknown members are the service's business, not a violation
		{"unknown member", `"future_option":{"x":1}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"audio_url":"https://example.com/a.wav"`
			if tc.body != "" {
				body += "," + tc.body
			}
			body += "}"
			r := decodeJSON[PreRecordedRequest](t, body)
			got := sentencesOf(t, r.Validate())
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Validate(%s)\n got %q\nwant %q", body, got, tc.want)
			}
		})
	}
}

func TestPreRecordedValidateAllAtOnce(t *testing.T) {
	body := `{
		"audio_url": "ftp://x/a.wav",
		"language": "xx",
		"callback": true,
		"subtitles_config": {"formats": ["ass"], "maximum_rows_per_caption": 9},
		"diarization_config": {"number_of_speakers": 0},
		"translation": true,
		"summarization_config": {"type": "long"},
		"custom_metadata": [],
		"language_config": {"languages": ["zz"]}
	}`
	r := decodeJSON[PreRecordedRequest](t, body)
	got := sentencesOf(t, r.Validate())
	want := []string{
		`audio_url must be an absolute http or https URL with a host (got "ftp://x/a.wav")`,
		`language must be a supported language code (got "xx")`,
		`language must match language_config.languages when both are given (got "xx" and ["zz"])`,
		"callback_config.url is required when callback is true",
		`subtitles_config.formats[0] must be one of srt, vtt (got "ass")`,
		"subtitles_config.maximum_rows_per_caption must be between 1 and 5 (got 9)",
		"diarization_config.number_of_speakers must be at least 1 (got 0)",
		"translation_config.target_languages must contain at least one language when translation is true",
		`summarization_config.type must be one of general, bullet_points, concise (got "long")`,
		"custom_metadata must be a JSON object (got array)",
		`language_config.languages[0] must be a supported language code (got "zz")`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %d sentences:\n%s\nwant %d:\n%s", len(got), strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
	if e := r.Validate().Error(); e != strings.Join(want, "; ") {
		t.Errorf("Error() = %q", e)
	}
	var ve ValidationErrors
	errors.As(r.Validate(), &ve)
	if ve[0].Field != "audio_url" || ve[4].Field != "subtitles_config.formats[0]" {
		t.Errorf("fields %q %q", ve[0].Field, ve[4].Field)
	}
}

func TestValidateTenFaults(t *testing.T) {
	// Ten independent faults give exactly ten sentences.
	body := `{
		"audio_url": "",
		"language": "xx",
		"callback_url": "nope",
		"callback_config": {"method": "GET"},
		"subtitles_config": {"maximum_duration": 40},
		"diarization_config": {"min_speakers": -1},
		"translation_config": {"target_languages": ["de"], "model": "x"},
		"summarization_config": {"type": "x"},
		"custom_vocabulary_config": {"default_intensity": 3},
		"custom_metadata": "meta"
	}`
	r := decodeJSON[PreRecordedRequest](t, body)
	got := sentencesOf(t, r.Validate())
	if len(got) != 10 {
		t.Fatalf("got %d sentences, want 10:\n%s", len(got), strings.Join(got, "\n"))
	}
}

func TestValidationErrorsErr(t *testing.T) {
	if err := (ValidationErrors{}).Err(); err != nil {
		t.Errorf("empty Err() = %v, want nil", err)
	}
	var r PreRecordedRequest
	r.AudioURL = "https://example.com/a"
	if err := r.Validate(); err != nil {
		t.Errorf("valid request: %v", err)
	}
	fe := FieldError{Field: "channels", Message: "must be between 1 and 8 (got 9)"}
	if fe.Error() != "channels must be between 1 and 8 (got 9)" {
		t.Errorf("FieldError.Error() = %q", fe.Error())
	}
}

func TestValidateQuotesLongValues(t *testing.T) {
	long := strings.Repeat("x", 100)
	r := PreRecordedRequest{AudioURL: "https://example.com/a", Language: long}
	got := sentencesOf(t, r.Validate())
	want := []string{`language must be a supported language code (got "` + strings.Repeat("x", 64) + `…")`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q", got)
	}
}

func TestValidateNaNFromGo(t *testing.T) {
	nan := Float(0)
	*nan = *nan / *nan
	r := LiveRequest{Endpointing: nan}
	got := sentencesOf(t, r.Validate())
	want := []string{"endpointing must be between 0.01 and 10 (got NaN)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q", got)
	}
}

func TestValidateInvalidMetadataFromGo(t *testing.T) {
	r := LiveRequest{CustomMetadata: json.RawMessage(`{"a":`)}
	got := sentencesOf(t, r.Validate())
	want := []string{"custom_metadata must be a JSON object (got invalid JSON)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q", got)
	}
}

func TestLiveValidate(t *testing.T) {
	cases := []ruleCase{
		{"empty", ``, nil},
		{"full valid", `"encoding":"wav/pcm","bit_depth":16,"sample_rate":16000,"channels":1,"model":"<default_model>","endpointing":0.05,"maximum_duration_without_endpointing":5,"language_config":{"languages":["en"]},"pre_processing":{"audio_enhancer":true,"speech_threshold":0.6},"realtime_processing":{"translation":true,"translation_config":{"target_languages":["fr"],"model":"base"},"custom_vocabulary":true,"custom_vocabulary_config":{"vocabulary":["a"]},"custom_spelling":true,"custom_spelling_config":{"spelling_dictionary":{"A":["a"]}},"named_entity_recognition":true,"sentiment_analysis":true},"post_processing":{"summarization":true,"summarization_config":{"type":"concise"},"chapterization":true},"messages_config":{"receive_partial_transcripts":true},"callback":true,"callback_config":{"url":"https://hooks.example.com/live","receive_errors":true},"custom_metadata":{"room":"a"}`, nil},

		{"encoding ulaw", `"encoding":"wav/ulaw"`, nil},
		{"encoding alaw 8 bit", `"encoding":"wav/alaw","bit_depth":8`, nil},
		{"encoding unknown", `"encoding":"mp3"`, []string{`encoding must be one of wav/pcm, wav/alaw, wav/ulaw (got "mp3")`}},
		{"encoding alaw 16 bit", `"encoding":"wav/alaw","bit_depth":16`,
			[]string{"bit_depth must be 8 when encoding is wav/alaw (got 16)"}},
		{"encoding ulaw 32 bit", `"encoding":"wav/ulaw","bit_depth":32`,
			[]string{"bit_depth must be 8 when encoding is wav/ulaw (got 32)"}},
		{"encoding ulaw odd bit depth", `"encoding":"wav/ulaw","bit_depth":12`,
			[]string{"bit_depth must be one of 8, 16, 24, 32 (got 12)"}},

		{"bit_depth 24", `"bit_depth":24`, nil},
		{"bit_depth 8", `"bit_depth":8`, nil},
		{"bit_depth 12", `"bit_depth":12`, []string{"bit_depth must be one of 8, 16, 24, 32 (got 12)"}},

		{"sample_rate 44100", `"sample_rate":44100`, nil},
		{"sample_rate 8000", `"sample_rate":8000`, nil},
		{"sample_rate 22050", `"sample_rate":22050`,
			[]string{"sample_rate must be one of 8000, 16000, 32000, 44100, 48000 (got 22050)"}},

		{"channels 8", `"channels":8`, nil},
		{"channels 1", `"channels":1`, nil},
		{"channels 9", `"channels":9`, []string{"channels must be between 1 and 8 (got 9)"}},
		{"channels 0", `"channels":0`, []string{"channels must be between 1 and 8 (got 0)"}},

		{"model solaria-1", `"model":"solaria-1"`, nil},
		{"model placeholder", `"model":"<default_model>"`, nil},
		{"model other", `"model":"solaria-2"`, []string{`model must be one of solaria-1, <default_model> (got "solaria-2")`}},

		{"endpointing low bound", `"endpointing":0.01`, nil},
		{"endpointing high bound", `"endpointing":10`, nil},
		{"endpointing low", `"endpointing":0.005`, []string{"endpointing must be between 0.01 and 10 (got 0.005)"}},
		{"endpointing high", `"endpointing":10.5`, []string{"endpointing must be between 0.01 and 10 (got 10.5)"}},

		{"max duration bounds", `"maximum_duration_without_endpointing":60`, nil},
		{"max duration low", `"maximum_duration_without_endpointing":4.99`,
			[]string{"maximum_duration_without_endpointing must be between 5 and 60 (got 4.99)"}},
		{"max duration high", `"maximum_duration_without_endpointing":61`,
			[]string{"maximum_duration_without_endpointing must be between 5 and 60 (got 61)"}},

		{"speech threshold bounds", `"pre_processing":{"speech_threshold":0}`, nil},
		{"speech threshold one", `"pre_processing":{"speech_threshold":1}`, nil},
		{"speech threshold high", `"pre_processing":{"speech_threshold":1.2}`,
			[]string{"pre_processing.speech_threshold must be between 0 and 1 (got 1.2)"}},

		{"language unknown", `"language_config":{"languages":["en","xx"]}`,
			[]string{`language_config.languages[1] must be a supported language code (got "xx")`}},

		{"realtime translation without config", `"realtime_processing":{"translation":true}`,
			[]string{"realtime_processing.translation_config.target_languages must contain at least one language when translation is true"}},
		{"realtime translation target unknown", `"realtime_processing":{"translation_config":{"target_languages":["zz"],"model":"fast"}}`,
			[]string{`realtime_processing.translation_config.target_languages[0] must be a supported language code (got "zz")`,
				`realtime_processing.translation_config.model must be one of base, enhanced (got "fast")`}},
		{"realtime vocabulary without terms", `"realtime_processing":{"custom_vocabulary":true}`,
			[]string{"realtime_processing.custom_vocabulary_config.vocabulary must contain at least one term when custom_vocabulary is true"}},
		{"realtime vocabulary intensity", `"realtime_processing":{"custom_vocabulary_config":{"vocabulary":[{"value":"a","intensity":-1}]}}`,
			[]string{"realtime_processing.custom_vocabulary_config.vocabulary[0].intensity must be between 0 and 1 (got -1)"}},
		{"realtime spelling without dictionary", `"realtime_processing":{"custom_spelling":true}`,
			[]string{"realtime_processing.custom_spelling_config.spelling_dictionary must contain at least one entry when custom_spelling is true"}},
		{"post summarization type", `"post_processing":{"summarization":true,"summarization_config":{"type":"long"}}`,
			[]string{`post_processing.summarization_config.type must be one of general, bullet_points, concise (got "long")`}},

		{"callback without url", `"callback":true`, []string{"callback_config.url is required when callback is true"}},
		{"callback flags without url", `"callback":true,"callback_config":{"receive_errors":true}`,
			[]string{"callback_config.url is required when callback is true"}},
		{"callback url invalid", `"callback_config":{"url":"hooks.example.com/live"}`,
			[]string{`callback_config.url must be an absolute http or https URL with a host (got "hooks.example.com/live")`}},
		{"callback off without url", `"callback":false`, nil},

		{"metadata array", `"custom_metadata":[]`, []string{"custom_metadata must be a JSON object (got array)"}},
		{"metadata over limit", `"custom_metadata":` + metadataOfLength(2001),
			[]string{"custom_metadata must be at most 2000 characters when serialised (got 2001)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := decodeJSON[LiveRequest](t, "{"+tc.body+"}")
			got := sentencesOf(t, r.Validate())
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Validate({%s})\n got %q\nwant %q", tc.body, got, tc.want)
			}
		})
	}
}

func TestLiveValidateAllAtOnce(t *testing.T) {
	r := decodeJSON[LiveRequest](t, `{"encoding":"flac","bit_depth":7,"sample_rate":1,"channels":9,"model":"m","endpointing":0,
		"maximum_duration_without_endpointing":100,"pre_processing":{"speech_threshold":-1},"callback":true,"custom_metadata":1}`)
	got := sentencesOf(t, r.Validate())
	want := []string{
		`encoding must be one of wav/pcm, wav/alaw, wav/ulaw (got "flac")`,
		"bit_depth must be one of 8, 16, 24, 32 (got 7)",
		"sample_rate must be one of 8000, 16000, 32000, 44100, 48000 (got 1)",
		"channels must be between 1 and 8 (got 9)",
		"custom_metadata must be a JSON object (got number)",
		`model must be one of solaria-1, <default_model> (got "m")`,
		"endpointing must be between 0.01 and 10 (got 0)",
		"maximum_duration_without_endpointing must be between 5 and 60 (got 100)",
		"pre_processing.speech_threshold must be between 0 and 1 (got -1)",
		"callback_config.url is required when callback is true",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestValidateRegion(t *testing.T) {
	for _, tc := range []struct {
		region string
		want   []string
	}{
		{"", nil},
		{"us-west", nil},
		{"eu-west", nil},
		{"ap-south", []string{`region must be one of us-west, eu-west (got "ap-south")`}},
		{"EU-WEST", []string{`region must be one of us-west, eu-west (got "EU-WEST")`}},
	} {
		if got := sentencesOf(t, ValidateRegion(tc.region)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ValidateRegion(%q) = %q, want %q", tc.region, got, tc.want)
		}
	}
}

func TestLanguages(t *testing.T) {
	codes := LanguageCodes()
	if len(codes) != 99 {
		t.Errorf("%d codes, want the 99 of §2.2", len(codes))
	}
	for i := 1; i < len(codes); i++ {
		if codes[i-1] >= codes[i] {
			t.Fatalf("codes not sorted at %q %q", codes[i-1], codes[i])
		}
	}
	for _, c := range []string{"af", "haw", "jw", "zh", "en", "yo"} {
		if !IsLanguage(c) {
			t.Errorf("IsLanguage(%q) = false", c)
		}
	}
	for _, c := range []string{"", "EN", "xx", "en-US", "zz", "ha ", "english"} {
		if IsLanguage(c) {
			t.Errorf("IsLanguage(%q) = true", c)
		}
	}
	codes[0] = "mutated"
	if !IsLanguage("af") {
		t.Error("LanguageCodes shares its backing array")
	}
}
