package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/internal/netguard"
	"github.com/scribehook/scribehook/sandbox/audio"
)

const (
	// DefaultMaxFetchBytes is Config.MaxFetchBytes when unset.
	DefaultMaxFetchBytes int64 = 512 << 20
	// maxSidecarBytes bounds a sidecar: word lists are small, and whatever a URL serves is
	// read into memory to be parsed.
	maxSidecarBytes int64 = 16 << 20
	// sidecarTimeout bounds the sidecar's fetch: it is optional and must not hold a job long.
	sidecarTimeout = 10 * time.Second
	// maxFetchRedirects is what net/http follows by default.
	maxFetchRedirects = 10
)

// fetchFailedMessage is the job error of every audio_url that could not be fetched: a refused
// address, a closed port, a timeout, a status other than 2xx and a body over the limit all read
// the same, so that jobs cannot be used to map what the sandbox's network can reach. The reason
// goes to the sandbox's log.
const fetchFailedMessage = "audio_url could not be fetched"

func fetchFailed() *jobFailure { return fail(http.StatusBadRequest, fetchFailedMessage) }

// newFetchClient is the client of audio_url and sidecar fetches: every connection, redirects
// included, goes through the address guard, and there is no proxy (the guard would check the
// proxy instead of the target).
func newFetchClient(allow []netip.Prefix, timeout time.Duration) *http.Client {
	g := netguard.FromPrefixes(allow)
	return &http.Client{
		Transport:     netguard.NewDialer(g, nil).Transport(nil),
		CheckRedirect: g.CheckRedirect(maxFetchRedirects),
		Timeout:       timeout,
	}
}

// tooLargeError ends a fetch whose body goes past the limit.
type tooLargeError struct{ limit int64 }

func (e *tooLargeError) Error() string { return fmt.Sprintf("body exceeds %d bytes", e.limit) }

// cappedBody reads a response body up to a limit and remembers why reading stopped early, so
// that a decoder's complaint about what it read is told apart from a failed fetch.
type cappedBody struct {
	body  io.ReadCloser
	limit int64
	left  int64
	err   error // first read error other than io.EOF, or *tooLargeError
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	// One byte past the limit tells a body of exactly the limit from a longer one.
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.body.Read(p)
	if int64(n) > c.left {
		c.err = &tooLargeError{limit: c.limit}
		return 0, c.err
	}
	c.left -= int64(n)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

func (c *cappedBody) Close() error { return c.body.Close() }

// open GETs rawURL through the guard; the caller reads the body within limit and closes it.
func (s *Server) open(ctx context.Context, rawURL string, limit int64) (*cappedBody, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", netguard.StripURLError(err))
	}
	req.Header.Set("User-Agent", "scribehook-sandbox")
	resp, err := s.fetcher.Do(req)
	if err != nil {
		return nil, netguard.StripURLError(err)
	}
	if resp.StatusCode/100 != 2 {
		resp.Body.Close()
		return nil, fmt.Errorf("answered %d", resp.StatusCode)
	}
	if resp.ContentLength > limit {
		resp.Body.Close()
		return nil, &tooLargeError{limit: limit}
	}
	return &cappedBody{body: resp.Body, limit: limit, left: limit}, nil
}

// loadAudio decodes the job's audio: upload, a file uploaded to this sandbox, read from its
// disk; when nil, what rawURL serves, fetched through the guard and decoded as it arrives, so
// memory follows the decoded audio (bounded by MaxAudioDuration) and never holds the file too.
// The fetched bytes are copied to the sandbox's directory on the way, for GET
// /v2/pre-recorded/{id}/file; the copy (nil if it could not be made) is returned with audio
// that decoded.
func (s *Server) loadAudio(ctx context.Context, log logrus.FieldLogger, id, rawURL string, upload *storedFile) (*audio.Audio, *keptAudio, error) {
	limits := audio.Limits{MaxDuration: s.cfg.MaxAudioDuration}
	if upload != nil {
		in, err := upload.open()
		if err != nil {
			return nil, nil, fmt.Errorf("read the upload: %w", err)
		}
		defer in.Close()
		a, err := decodeAudio(bufio.NewReader(in), limits)
		if err != nil {
			return nil, nil, err
		}
		return a, uploadAudio(upload), nil
	}
	body, err := s.open(ctx, rawURL, s.cfg.MaxFetchBytes)
	if err != nil {
		logFetchFailure(log, "audio_url", rawURL, err)
		return nil, nil, fetchFailed()
	}
	defer body.Close()
	k := s.newKeeper(id)
	var src io.Reader = body
	if k != nil {
		src = io.TeeReader(body, k)
	}
	a, err := decodeAudio(src, limits)
	if err == nil && k != nil {
		// The decoder stops at the end of the data chunk: the copy takes the rest of the file
		// (chunks after the samples), within the same limit.
		_, _ = io.Copy(k, body)
	}
	if body.err != nil {
		// The decoder saw a broken or oversized stream, not bad audio: the fetch failed.
		_, _ = k.finish(false, "")
		logFetchFailure(log, "audio_url", rawURL, body.err)
		return nil, nil, fetchFailed()
	}
	kept, keepErr := k.finish(err == nil, fileName(rawURL))
	if keepErr != nil {
		log.WithError(keepErr).Warn("audio copy not kept: GET /v2/pre-recorded/{id}/file will answer 404")
	}
	return a, kept, err
}

func decodeAudio(r io.Reader, limits audio.Limits) (*audio.Audio, error) {
	a, err := audio.Decode(r, limits)
	if err != nil {
		if errors.Is(err, audio.ErrTooLarge) {
			return nil, fail(http.StatusRequestEntityTooLarge, "audio is too long: %v", err)
		}
		return nil, fail(http.StatusUnprocessableEntity, "audio could not be decoded: %v", err)
	}
	return a, nil
}

// fetchSidecar looks for the scripted engine's word list next to the audio (<url>.json),
// through the same guard as the audio. It is optional: any failure means there is none.
func (s *Server) fetchSidecar(ctx context.Context, log logrus.FieldLogger, rawURL string, uploaded bool) []byte {
	if uploaded {
		return nil // an upload has no sidecar next to it
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	u.Path += ".json"
	u.RawPath = ""
	ctx, cancel := context.WithTimeout(ctx, sidecarTimeout)
	defer cancel()
	body, err := s.open(ctx, u.String(), min(maxSidecarBytes, s.cfg.MaxFetchBytes))
	if err != nil {
		log.WithFields(logrus.Fields{"url": netguard.RedactURL(u.String()), "reason": err.Error()}).Debug("no sidecar")
		return nil
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		logFetchFailure(log, "sidecar", u.String(), err)
		return nil
	}
	if !json.Valid(data) {
		return nil
	}
	return data
}

// logFetchFailure records why a fetch failed, which the job's error does not say. The URL is
// logged without user info, query or fragment: signed URLs carry their secrets there.
func logFetchFailure(log logrus.FieldLogger, what, rawURL string, err error) {
	log.WithFields(logrus.Fields{"url": netguard.RedactURL(rawURL), "reason": err.Error()}).Warn(what + " fetch failed")
}
