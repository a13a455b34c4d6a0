package api

import (
	"encoding/json"
	"strings"
	"testing"
)

const testToken = "Zk9vQmFyQmF6UXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWpr"

func TestRedactCallbackURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"http://127.0.0.1:8787/v1/callbacks/" + testToken, "http://127.0.0.1:8787/v1/callbacks/[token]"},
		{"https://hooks.example.com/base/v1/callbacks/" + testToken + "/", "https://hooks.example.com/base/v1/callbacks/[token]"},
		{"https://h.example/hook?secret=" + testToken + "&team=a", "https://h.example/[token]?secret=[token]&team=[token]"},
		{"https://user:" + testToken + "@h.example/x/y", "https://%5Btoken%5D@h.example/x/[token]"},
		{"https://" + testToken + "@h.example", "https://%5Btoken%5D@h.example"},
		{"https://h.example/a#" + testToken, "https://h.example/[token]#[token]"},
		{"https://h.example", "https://h.example"},
		{"/v1/callbacks/" + testToken, "/v1/callbacks/[token]"},
		{"http://[::1]:8787/v1/callbacks/" + testToken, "http://[::1]:8787/v1/callbacks/[token]"},
		{"http://h/%zz/" + testToken, "[token]"}, // does not parse
		{"mailto:" + testToken, "[token]"},
		// Already redacted: unchanged.
		{"http://127.0.0.1:8787/v1/callbacks/[token]", "http://127.0.0.1:8787/v1/callbacks/[token]"},
	} {
		if got := RedactCallbackURL(tc.in); got != tc.want {
			t.Errorf("RedactCallbackURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := RedactCallbackURL(RedactCallbackURL(tc.in)); got != RedactCallbackURL(tc.in) {
			t.Errorf("redacting %q twice gives %q", tc.in, got)
		}
	}
}

func TestRedactRequestParams(t *testing.T) {
	u := "http://127.0.0.1:8787/v1/callbacks/" + testToken
	r := "http://127.0.0.1:8787/v1/callbacks/[token]"
	for _, tc := range []struct{ name, in, want string }{
		{"no callback", `{"audio_url":"https://e.com/a.wav","diarization":true}`, `{"audio_url":"https://e.com/a.wav","diarization":true}`},
		{"null", `null`, `null`},
		{"pre-recorded callback_config, order and spacing kept",
			`{"audio_url":"https://e.com/a.wav", "callback":true,"callback_config": {"method":"PUT", "url":"` + u + `"},"z":1}`,
			`{"audio_url":"https://e.com/a.wav", "callback":true,"callback_config": {"method":"PUT", "url":"` + r + `"},"z":1}`},
		{"deprecated callback_url", `{"callback_url":"` + u + `"}`, `{"callback_url":"` + r + `"}`},
		{"case variants encoding/json would decode", `{"Callback_Config":{"URL":"` + u + `"},"CALLBACK_URL":"` + u + `"}`,
			`{"Callback_Config":{"URL":"` + r + `"},"CALLBACK_URL":"` + r + `"}`},
		{"Kelvin sign in the key", `{"callbac\u212a_url":"` + u + `"}`, `{"callbac\u212a_url":"` + r + `"}`},
		{"escaped key", `{"callback\u005furl":"` + u + `"}`, `{"callback\u005furl":"` + r + `"}`},
		{"escaped slashes in the value", `{"callback_url":"http:\/\/h\/v1\/callbacks\/` + testToken + `"}`, `{"callback_url":"http://h/v1/callbacks/[token]"}`},
		{"duplicate members, both redacted", `{"callback_url":"` + u + `","callback_url":"` + u + `"}`, `{"callback_url":"` + r + `","callback_url":"` + r + `"}`},
		{"live callback_config with flags", `{"callback":true,"callback_config":{"url":"` + u + `","receive_partial_transcripts":true}}`,
			`{"callback":true,"callback_config":{"url":"` + r + `","receive_partial_transcripts":true}}`},
		{"callback_config not an object", `{"callback_config":"` + u + `"}`, `{"callback_config":"` + u + `"}`},
		{"url elsewhere is not a callback", `{"audio_url":"` + u + `"}`, `{"audio_url":"` + u + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(RedactRequestParams(json.RawMessage(tc.in)))
			if got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// A record decoded from the service (or the store) never holds the token, whatever spelling
// the params use.
func TestJobDecodeRedactsCallbackURL(t *testing.T) {
	body := `{"id":"j1","status":"done","kind":"pre-recorded","request_params":{"audio_url":"https://e.com/a.wav","callback_config":{"url":"http://127.0.0.1:8787/v1/callbacks/` + testToken + `","method":"POST"}}}`
	var j Job
	if err := json.Unmarshal([]byte(body), &j); err != nil {
		t.Fatal(err)
	}
	want := `{"audio_url":"https://e.com/a.wav","callback_config":{"url":"http://127.0.0.1:8787/v1/callbacks/[token]","method":"POST"}}`
	if string(j.RequestParams) != want {
		t.Fatalf("request_params = %s", j.RequestParams)
	}
	out, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), testToken) {
		t.Fatalf("encoded record holds the token: %s", out)
	}
}

func FuzzRedactRequestParams(f *testing.F) {
	f.Add([]byte(`{"callback_config":{"url":"http://h/v1/callbacks/` + testToken + `"}}`))
	f.Add([]byte(`{"CALLBACK_URL":"http://h/x?k=` + testToken + `"}`))
	f.Add([]byte(`{"callback_url":"http:\/\/h\/` + testToken + `", "a":[1,2,{"b":null}]}`))
	f.Add([]byte(`{"callback_config":{"URL":"http://` + testToken + `@h/"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		out := RedactRequestParams(raw)
		if !json.Valid(out) {
			t.Fatalf("not JSON after redaction: %s", out)
		}
		// What encoding/json decodes into the callback fields holds no secret of the URL.
		var p struct {
			CallbackURL    any `json:"callback_url"`
			CallbackConfig any `json:"callback_config"`
		}
		if json.Unmarshal(out, &p) != nil {
			return
		}
		check := func(s string) {
			if s != RedactCallbackURL(s) {
				t.Fatalf("callback URL left as %q in %s (from %s)", s, out, raw)
			}
		}
		if s, ok := p.CallbackURL.(string); ok {
			check(s)
		}
		if m, ok := p.CallbackConfig.(map[string]any); ok {
			var cc struct {
				URL any `json:"url"`
			}
			b, _ := json.Marshal(m)
			if json.Unmarshal(b, &cc) == nil {
				if s, ok := cc.URL.(string); ok {
					check(s)
				}
			}
		}
		if again := RedactRequestParams(out); string(again) != string(out) {
			t.Fatalf("not stable: %s then %s", out, again)
		}
	})
}
