package submitter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/api"
)

func TestAPIErrorWithValidationErrors(t *testing.T) {
	body := `{"timestamp":"2026-11-20T10:00:00.000Z","path":"/v2/pre-recorded","request_id":"G-1a2b3c4d",` +
		`"statusCode":400,"message":"invalid parameters","validation_errors":["audio_url must be an absolute URL","subtitles_config.maximum_rows_per_caption must be between 1 and 5"]}`
	srv := newRecorder(t, reply(400, body))
	c, _ := newTestClient(t, srv.URL)
	_, err := c.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: "nope"})

	var ae *APIError
	if !errors.As(fmt.Errorf("outer: %w", err), &ae) {
		t.Fatalf("errors.As through wrapping failed: %v", err)
	}
	if ae.StatusCode != 400 || ae.Message != "invalid parameters" || ae.RequestID != "G-1a2b3c4d" || ae.Path != "/v2/pre-recorded" {
		t.Fatalf("decoded %+v", ae)
	}
	if string(ae.Body) != body {
		t.Fatalf("Body = %s", ae.Body)
	}
	want := "service: 400 Bad Request: invalid parameters (request G-1a2b3c4d)\n" +
		"  - audio_url must be an absolute URL\n" +
		"  - subtitles_config.maximum_rows_per_caption must be between 1 and 5"
	if ae.Error() != want {
		t.Fatalf("Error() =\n%s\nwant\n%s", ae.Error(), want)
	}
	if err.Error() != "create job: "+want {
		t.Fatalf("wrapped = %q", err.Error())
	}
}

func TestAPIErrorWithoutValidationErrors(t *testing.T) {
	srv := newRecorder(t, reply(404, `{"timestamp":"2026-11-20T10:00:00.000Z","path":"/v2/live/x","request_id":"G-00ff00ff","statusCode":404,"message":"job x not found"}`))
	c, _ := newTestClient(t, srv.URL)
	_, err := c.GetLive(context.Background(), "x")
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v", err)
	}
	if got, want := ae.Error(), "service: 404 Not Found: job x not found (request G-00ff00ff)"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if ae.ValidationErrors != nil {
		t.Fatalf("ValidationErrors = %v", ae.ValidationErrors)
	}
}

func TestAPIErrorNonJSONBody(t *testing.T) {
	html := "<html>\n<body>\n<h1>502 Bad Gateway</h1>\n</body>\n</html>\n"
	srv := newRecorder(t, reply(401, html, "Content-Type", "text/html", "X-Request-Id", "G-0badf00d"))
	c, _ := newTestClient(t, srv.URL)
	_, err := c.GetPreRecorded(context.Background(), "a b")
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v", err)
	}
	if ae.Path != "/v2/pre-recorded/a%20b" || ae.RequestID != "G-0badf00d" || string(ae.Body) != html {
		t.Fatalf("decoded path %q request %q body %q", ae.Path, ae.RequestID, ae.Body)
	}
	if got, want := ae.Error(), "service: 401 Unauthorized: <html> <body> <h1>502 Bad Gateway</h1> </body> </html> (request G-0badf00d)"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}

func TestAPIErrorBodyShapes(t *testing.T) {
	long := strings.Repeat("x", 500)
	cases := []struct {
		name, body, want string
	}{
		{"empty", "", "service: 418 I'm a teapot"},
		{"message array", `{"statusCode":422,"message":["a is bad","b is bad"]}`, "service: 418 I'm a teapot: a is bad; b is bad"},
		{"long text", long, "service: 418 I'm a teapot: " + long[:maxSnippet] + "…"},
		{"binary", "\xff\xfe\x00", "service: 418 I'm a teapot"},
		{"broken json", `{"message":`, `service: 418 I'm a teapot: {"message":`},
	}
	for _, tc := range cases {
		if got := newAPIError(418, "/p", []byte(tc.body)).Error(); got != tc.want {
			t.Errorf("%s: Error() = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestDecodeErrorNamesTheEndpoint(t *testing.T) {
	srv := newRecorder(t, reply(200, `{"id": 42}`))
	c, s := newTestClient(t, srv.URL)
	_, err := c.GetTranscription(context.Background(), "j1")
	if err == nil || !strings.Contains(err.Error(), "decode response of GET /v2/transcription/j1") {
		t.Fatalf("err = %v", err)
	}
	if srv.count() != 1 || len(s.got()) != 0 {
		t.Fatalf("a bad body was retried: attempts = %d", srv.count())
	}
}

func TestUnexpectedSuccessStatusIsAnError(t *testing.T) {
	srv := newRecorder(t, reply(200, `{"id":"x","result_url":"u"}`))
	c, _ := newTestClient(t, srv.URL)
	_, err := c.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: "http://a/b"})
	if !IsStatus(err, 200) {
		t.Fatalf("err = %v, want an APIError with status 200", err)
	}
}

// A redirect would carry the key header to wherever it points, so it is never followed.
func TestRedirectsAreNotFollowed(t *testing.T) {
	target := newRecorder(t, reply(200, jobJSON))
	srv := newRecorder(t, reply(302, "", "Location", target.URL+"/v2/pre-recorded/j1"))
	c, _ := newTestClient(t, srv.URL)
	_, err := c.GetPreRecorded(context.Background(), "j1")
	if !IsStatus(err, 302) || target.count() != 0 {
		t.Fatalf("err = %v, target hit %d times", err, target.count())
	}
}
