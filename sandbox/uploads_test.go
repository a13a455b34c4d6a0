package sandbox_test

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/sandbox"
)

// upload posts data as a multipart file named name and returns the status and answer.
func (e *env) upload(name string, data []byte) (int, sandbox.UploadResponse, []byte) {
	e.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	part, err := mw.CreateFormFile("audio", name)
	if err != nil {
		e.t.Fatal(err)
	}
	_, _ = part.Write(data)
	_ = mw.Close()
	status, body, _ := e.raw("POST", "/v2/upload", testKey, mw.FormDataContentType(), buf.Bytes())
	var up sandbox.UploadResponse
	if status == http.StatusCreated {
		decodeJSON(e.t, body, &up)
	}
	return status, up, body
}

// getURL GETs an absolute URL with the key header set to key (none when empty).
func getURL(t *testing.T, rawURL, key string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("x-service-key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes(), resp.Header
}

// withoutQuery is rawURL with its query (the upload's token) cut off.
func withoutQuery(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	u.RawQuery = ""
	return u.String()
}

// uploadsOnDisk lists the uploads the sandbox holds in its directory under dir.
func uploadsOnDisk(t *testing.T, dir string) []string {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(dir, "scribehook-sandbox-*", "upload-*"))
	if err != nil {
		t.Fatal(err)
	}
	return found
}

const activePage = `<!doctype html><html><body><script>document.title = "ran"</script></body></html>`

// An upload comes back as inert bytes: whatever it holds, a browser must neither render it nor
// run it (it would do so on the sandbox's site, which a dashboard on another port shares).
func TestUploadedFileIsServedInert(t *testing.T) {
	e := newEnv(t, nil)
	status, up, body := e.upload("page.html", []byte(activePage))
	if status != http.StatusCreated {
		t.Fatalf("upload = %d %s", status, body)
	}
	for _, key := range []string{testKey, ""} { // with the key, then with the URL's token alone
		status, got, h := getURL(t, up.AudioURL, key)
		if status != http.StatusOK || string(got) != activePage {
			t.Fatalf("GET audio_url (key %q) = %d %q", key, status, got)
		}
		if ct := h.Get("Content-Type"); ct != "application/octet-stream" {
			t.Errorf("Content-Type = %q, want application/octet-stream", ct)
		}
		if v := h.Get("X-Content-Type-Options"); v != "nosniff" {
			t.Errorf("X-Content-Type-Options = %q, want nosniff", v)
		}
		if d := h.Get("Content-Disposition"); !strings.HasPrefix(d, "attachment") {
			t.Errorf("Content-Disposition = %q, want attachment", d)
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "sandbox") || !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("Content-Security-Policy = %q, want sandbox and default-src 'none'", csp)
		}
	}
}

// GET /v2/files/{id} answers only the API key or the token of the URL the upload returned; a
// refusal never quotes what was sent.
func TestUploadedFileNeedsKeyOrToken(t *testing.T) {
	e := newEnv(t, nil)
	wav := speechLike(t, 1, [][2]float64{{0.2, 0.8}}, 16000)
	status, up, body := e.upload("a.wav", wav)
	if status != http.StatusCreated {
		t.Fatalf("upload = %d %s", status, body)
	}
	bare := withoutQuery(t, up.AudioURL)
	if bare == up.AudioURL {
		t.Fatalf("audio_url %s carries no token", up.AudioURL)
	}
	u, _ := url.Parse(up.AudioURL)
	token := u.Query().Get("token")
	if len(token) < 32 {
		t.Fatalf("token %q: want at least 128 bits in hex", token)
	}
	const wrongKey = "wrong-key-that-must-not-echo"
	wrongToken := strings.Repeat("0", len(token))
	for _, tc := range []struct {
		name, url, key string
		want           int
	}{
		{"no key, no token", bare, "", http.StatusUnauthorized},
		{"wrong key", bare, wrongKey, http.StatusUnauthorized},
		{"wrong key, right token", up.AudioURL, wrongKey, http.StatusUnauthorized},
		{"wrong token", bare + "?token=" + wrongToken, "", http.StatusNotFound},
		{"right key", bare, testKey, http.StatusOK},
		{"right token", up.AudioURL, "", http.StatusOK},
	} {
		status, got, _ := getURL(t, tc.url, tc.key)
		if status != tc.want {
			t.Errorf("%s: status %d %s, want %d", tc.name, status, truncate(got), tc.want)
			continue
		}
		if status != http.StatusOK {
			if bytes.Contains(got, []byte(wrongKey)) || bytes.Contains(got, []byte(wrongToken)) || bytes.Contains(got, []byte(token)) {
				t.Errorf("%s: the refusal quotes what was sent: %s", tc.name, got)
			}
			continue
		}
		if !bytes.Equal(got, wav) {
			t.Errorf("%s: body is not the upload", tc.name)
		}
	}
	// A job given the URL without its token does not reach the upload either: it is fetched
	// like any URL, and the fetch is refused.
	out := e.run(bare)
	if out.status != api.StatusError {
		t.Errorf("job from the URL without its token = %+v, want an error", out)
	}
	if out := e.run(up.AudioURL); out.status != api.StatusDone {
		t.Errorf("job from audio_url = %+v, want done", out)
	}
}

// Uploads share a total limit: past it, an upload is refused with a 413 naming the limit,
// and deleting the job that used an upload gives its room back.
func TestUploadsTotalCap(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, func(c *sandbox.Config) {
		c.TempDir = dir
		c.MaxUploadBytes = 40000
		c.MaxUploadStoreBytes = 70000
	})
	wav := speechLike(t, 1, [][2]float64{{0.2, 0.8}}, 16000) // 32044 bytes
	status, first, body := e.upload("1.wav", wav)
	if status != http.StatusCreated {
		t.Fatalf("first upload = %d %s", status, body)
	}
	if status, _, body := e.upload("2.wav", wav); status != http.StatusCreated {
		t.Fatalf("second upload = %d %s", status, body)
	}
	status, _, body = e.upload("3.wav", wav)
	env := checkEnvelope(t, status, body, http.StatusRequestEntityTooLarge, "/v2/upload", "")
	if !strings.Contains(env.Message, "70000 bytes") {
		t.Errorf("message %q does not name the limit of 70000 bytes", env.Message)
	}
	if got := uploadsOnDisk(t, dir); len(got) != 2 {
		t.Errorf("after the refusal, uploads on disk = %v, want the two accepted", got)
	}
	created, err := e.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: first.AudioURL})
	if err != nil {
		t.Fatal(err)
	}
	e.waitJob(created.ID, api.KindPreRecorded)
	if err := e.client.DeletePreRecorded(context.Background(), created.ID); err != nil {
		t.Fatal(err)
	}
	if status, _, body := e.upload("3.wav", wav); status != http.StatusCreated {
		t.Errorf("upload after deleting the job of the first = %d %s, want 201", status, body)
	}
}

// An upload lives on disk, and goes with the job made from it.
func TestUploadFreedWithItsJob(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, func(c *sandbox.Config) { c.TempDir = dir })
	wav := speechLike(t, 1, [][2]float64{{0.2, 0.8}}, 16000)
	status, up, body := e.upload("a.wav", wav)
	if status != http.StatusCreated {
		t.Fatalf("upload = %d %s", status, body)
	}
	if got := uploadsOnDisk(t, dir); len(got) != 1 {
		t.Fatalf("uploads on disk = %v, want one", got)
	}
	created, err := e.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: up.AudioURL})
	if err != nil {
		t.Fatal(err)
	}
	if job := e.waitJob(created.ID, api.KindPreRecorded); job.Status != api.StatusDone {
		t.Fatalf("job = %s %s", job.Status, job.PostSessionMetadata)
	}
	if status, _, _ := getFile(t, e, "/v2/pre-recorded/"+created.ID+"/file"); status != http.StatusOK {
		t.Errorf("GET …/file before delete = %d, want 200", status)
	}
	if err := e.client.DeletePreRecorded(context.Background(), created.ID); err != nil {
		t.Fatal(err)
	}
	if status, _, _ := getURL(t, up.AudioURL, testKey); status != http.StatusNotFound {
		t.Errorf("GET audio_url after its job was deleted = %d, want 404", status)
	}
	if got := uploadsOnDisk(t, dir); len(got) != 0 {
		t.Errorf("uploads on disk after the job was deleted = %v, want none", got)
	}
}

// An upload no job uses is dropped after UploadTTL; one a job uses stays with the job.
func TestUnusedUploadExpires(t *testing.T) {
	dir := t.TempDir()
	const ttl = 300 * time.Millisecond
	e := newEnv(t, func(c *sandbox.Config) { c.TempDir = dir; c.UploadTTL = ttl })
	wav := speechLike(t, 1, [][2]float64{{0.2, 0.8}}, 16000)
	_, unused, _ := e.upload("unused.wav", wav)
	_, used, _ := e.upload("used.wav", wav)
	if status, _, _ := getURL(t, unused.AudioURL, ""); status != http.StatusOK {
		t.Fatalf("GET a fresh upload = %d, want 200", status)
	}
	created, err := e.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: used.AudioURL})
	if err != nil {
		t.Fatal(err)
	}
	e.waitJob(created.ID, api.KindPreRecorded)
	deadline := time.Now().Add(10 * time.Second)
	for len(uploadsOnDisk(t, dir)) > 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := uploadsOnDisk(t, dir); len(got) != 1 {
		t.Errorf("uploads on disk well after the TTL = %v, want only the one a job uses", got)
	}
	if status, _, _ := getURL(t, unused.AudioURL, ""); status != http.StatusNotFound {
		t.Errorf("GET the unused upload after the TTL = %d, want 404", status)
	}
	if status, got, _ := getURL(t, used.AudioURL, ""); status != http.StatusOK || !bytes.Equal(got, wav) {
		t.Errorf("GET the upload a job uses after the TTL = %d, want 200 and its bytes", status)
	}
}

// Close removes what is left.
func TestCloseRemovesUploads(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, func(c *sandbox.Config) { c.TempDir = dir })
	if status, _, body := e.upload("a.wav", speechLike(t, 1, nil, 16000)); status != http.StatusCreated {
		t.Fatalf("upload = %d %s", status, body)
	}
	if got := uploadsOnDisk(t, dir); len(got) != 1 {
		t.Fatalf("uploads on disk = %v, want one", got)
	}
	if err := e.svc.Close(); err != nil {
		t.Fatal(err)
	}
	if got := uploadsOnDisk(t, dir); len(got) != 0 {
		t.Errorf("uploads on disk after Close = %v", got)
	}
}
