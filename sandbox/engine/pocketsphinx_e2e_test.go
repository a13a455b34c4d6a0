//go:build pocketsphinx

package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sandbox/engine"
	"github.com/scribehook/scribehook/submitter"
)

// End to end: the sandbox with the pocketsphinx engine transcribes an uploaded flite WAV.
func TestPocketsphinxSandboxJob(t *testing.T) {
	if _, err := os.Stat(filepath.Join(engine.DefaultPocketsphinxModel, "en-us.lm.bin")); err != nil {
		t.Skipf("pocketsphinx model not installed (%v): apt-get install pocketsphinx-en-us", err)
	}
	bin, err := exec.LookPath("flite")
	if err != nil {
		t.Skip("flite not installed: apt-get install flite")
	}
	sentences := []string{
		"the quick brown fox jumps over the lazy dog",
		"open the door and turn on the lights in the kitchen",
	}
	wav := filepath.Join(t.TempDir(), "speech.wav")
	if out, err := exec.Command(bin, "-voice", "slt", "-t", strings.Join(sentences, ". ")+".", "-o", wav).CombinedOutput(); err != nil {
		t.Fatalf("flite: %v: %s", err, out)
	}
	data, err := os.ReadFile(wav)
	if err != nil {
		t.Fatal(err)
	}

	eng, err := engine.NewRegistry().New(engine.PocketsphinxName)
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	const key = "test-key-0123456789"
	srv, err := sandbox.New(sandbox.Config{APIKey: key, Engine: eng, Logger: logrus.NewEntry(log)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		_ = srv.Close()
		_ = eng.Close()
	})

	// Upload the WAV as the service's clients do: multipart, part "audio".
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, err := mw.CreateFormFile("audio", "speech.wav")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = part.Write(data)
	_ = mw.Close()
	req, err := http.NewRequest(http.MethodPost, hs.URL+"/v2/upload", &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("x-service-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var up sandbox.UploadResponse
	err = json.NewDecoder(resp.Body).Decode(&up)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %d %v", resp.StatusCode, err)
	}

	client, err := submitter.New(hs.URL, key)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	created, err := client.CreatePreRecorded(ctx, api.PreRecordedRequest{AudioURL: up.AudioURL})
	if err != nil {
		t.Fatal(err)
	}
	var job api.Job
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if job, err = client.GetPreRecorded(ctx, created.ID); err != nil {
			t.Fatal(err)
		}
		if job.Status.Final() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job still %s", job.Status)
		}
	}
	if job.Status != api.StatusDone || len(job.Result) == 0 || apitest.MustResult(&job).Transcription == nil || apitest.MustResult(&job).Metadata == nil {
		t.Fatalf("job %s: %s", job.Status, job.PostSessionMetadata)
	}
	tr := apitest.MustResult(&job).Transcription
	ref := strings.Fields(strings.Join(sentences, " "))
	hyp := strings.Fields(strings.ToLower(tr.FullTranscript))
	errs := engine.WordErrors(ref, hyp)
	t.Logf("full_transcript %q: %d errors in %d words", tr.FullTranscript, errs, len(ref))
	if float64(errs) > 0.2*float64(len(ref)) {
		t.Fatalf("WER above 20 %%: %q", tr.FullTranscript)
	}
	md := apitest.MustResult(&job).Metadata
	if md.AudioDuration <= 0 || md.BillingTime != md.AudioDuration {
		t.Fatalf("metadata %+v", md)
	}
	last := 0.0
	for _, u := range tr.Utterances {
		if len(u.Words) == 0 || u.Language != "en" {
			t.Fatalf("utterance %+v", u)
		}
		for _, w := range u.Words {
			if w.Start < last || w.End <= w.Start || w.End > md.AudioDuration || w.Confidence <= 0 || w.Confidence > 1 {
				t.Fatalf("word %+v after %v in %v s", w, last, md.AudioDuration)
			}
			last = w.End
		}
	}
}
