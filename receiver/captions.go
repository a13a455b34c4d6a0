package receiver

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/captions"
	"github.com/scribehook/scribehook/captions/signedurl"
	"github.com/scribehook/scribehook/store"
)

// Bounds of the captions' signed URLs (POST /v1/live/:id/captions/url?ttl=…).
const (
	DefaultCaptionsURLTTL = 6 * time.Hour
	MaxCaptionsURLTTL     = 30 * 24 * time.Hour
	minCaptionsURLTTL     = time.Minute
)

// captionTracks bounds how many sessions' tracks the receiver keeps built: each request reads
// only the messages stored since the last one, rather than the whole session again.
const captionTracks = 256

// captionCache holds the caption tracks of recently asked sessions, least recently used
// first out.
type captionCache struct {
	cfg   captions.Config
	mu    sync.Mutex
	byID  map[string]*list.Element // of *captionEntry
	order *list.List               // front: most recently used
}

// captionEntry is one session's track and how far into its messages it was built.
type captionEntry struct {
	id string
	mu sync.Mutex
	tr *captions.Track
	// after is the last message read; started is whether a start message set the clock.
	after     int64
	started   bool
	recording float64
}

func newCaptionCache(cfg captions.Config) *captionCache {
	return &captionCache{cfg: cfg, byID: map[string]*list.Element{}, order: list.New()}
}

// entry is id's entry, made with a track starting at start when the cache has none.
func (cc *captionCache) entry(id string, start time.Time) *captionEntry {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if el, ok := cc.byID[id]; ok {
		cc.order.MoveToFront(el)
		return el.Value.(*captionEntry)
	}
	e := &captionEntry{id: id, tr: captions.NewTrack(cc.cfg, start)}
	cc.byID[id] = cc.order.PushFront(e)
	for cc.order.Len() > captionTracks {
		last := cc.order.Back()
		cc.order.Remove(last)
		delete(cc.byID, last.Value.(*captionEntry).id)
	}
	return e
}

// errNoSession is captionTrack's error for an id that names no live session.
var errNoSession = errors.New("no such live session")

// withCaptionTrack brings id's track up to date with the store and runs fn on it, locked.
func (r *Receiver) withCaptionTrack(ctx context.Context, id string, fn func(*captions.Track) error) error {
	// The path parameter lives in Fiber's buffer, reused by the next request; the cache keeps
	// the id past this one.
	id = strings.Clone(id)
	rec, err := r.cfg.Store.GetJob(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && rec.Job.Kind != api.KindLive {
		return errNoSession
	}
	if err != nil {
		return fmt.Errorf("read session: %w", err)
	}
	e := r.captions.entry(id, rec.Job.CreatedAt.Time)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := r.readCaptionMessages(ctx, e); err != nil {
		return err
	}
	// The record is read before the messages: a session it says ended has them all stored.
	if rec.Job.Status.Final() {
		at := r.now()
		if rec.Job.CompletedAt != nil {
			at = rec.Job.CompletedAt.Time
		}
		e.tr.End(e.recording, at)
	}
	return fn(e.tr)
}

// readCaptionMessages adds the messages stored since e was last brought up to date.
func (r *Receiver) readCaptionMessages(ctx context.Context, e *captionEntry) error {
	for {
		msgs, err := r.cfg.Store.LiveMessages(ctx, e.id, e.after, streamBatch)
		if err != nil {
			return fmt.Errorf("read messages: %w", err)
		}
		for _, m := range msgs {
			e.after = m.Seq
			r.addCaptionMessage(e, m)
		}
		if len(msgs) < streamBatch {
			return nil
		}
	}
}

// addCaptionMessage takes what the track needs of one message: the clock of session time 0
// (start_recording, else start_session, else the record's creation), the finals, and the
// recording's duration.
func (r *Receiver) addCaptionMessage(e *captionEntry, m store.LiveMessage) {
	switch m.Type {
	case api.MessageStartRecording, api.MessageStartSession:
		if !m.CreatedAt.IsZero() && (!e.started || m.Type == api.MessageStartRecording) {
			e.tr.SetStart(m.CreatedAt)
			e.started = true
		}
	case api.MessageTranscript, api.MessageEndRecording:
		var msg struct {
			Data struct {
				IsFinal           bool          `json:"is_final"`
				Utterance         api.Utterance `json:"utterance"`
				RecordingDuration float64       `json:"recording_duration"`
			} `json:"data"`
		}
		if err := json.Unmarshal(m.Payload, &msg); err != nil {
			r.log.WithField("session_id", e.id).WithField("seq", m.Seq).WithError(err).Warn("captions: message not decoded")
			return
		}
		if m.Type == api.MessageEndRecording {
			e.recording = msg.Data.RecordingDuration
			return
		}
		if !msg.Data.IsFinal || m.Category != api.CategoryFinalTranscripts && m.Category != "" {
			return
		}
		if err := e.tr.AddFinal(msg.Data.Utterance); err != nil {
			r.log.WithField("session_id", e.id).WithField("seq", m.Seq).WithError(err).Warn("captions: final not cut into cues")
		}
	}
}

// captionsPlaylist is GET /v1/live/:id/captions.m3u8: the session's finals as an HLS
// subtitle playlist, its segment URIs signed as the request was.
func (r *Receiver) captionsPlaylist(c *fiber.Ctx) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	query := ""
	if exp, sig := c.Query(signedurl.ParamExpiry), c.Query(signedurl.ParamSignature); sig != "" {
		query = "?" + signedurl.ParamExpiry + "=" + url.QueryEscape(exp) + "&" + signedurl.ParamSignature + "=" + url.QueryEscape(sig)
	}
	var body []byte
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	err = r.withCaptionTrack(ctx, id, func(t *captions.Track) error {
		body = t.Playlist(r.now(), captions.SegmentPath(query))
		return nil
	})
	if err != nil {
		return r.captionsFailed(c, err)
	}
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set(fiber.HeaderContentType, "application/vnd.apple.mpegurl")
	return c.Send(body)
}

// captionsSegment is GET /v1/live/:id/captions/:n.vtt: one WebVTT segment.
func (r *Receiver) captionsSegment(c *fiber.Ctx) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	n, err := captions.ParseSegmentName(c.Params("seg"))
	if err != nil {
		return writeError(c, fiber.StatusNotFound, err.Error())
	}
	var body []byte
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	err = r.withCaptionTrack(ctx, id, func(t *captions.Track) error {
		body, err = t.SegmentVTT(n, r.now())
		return err
	})
	if err != nil {
		return r.captionsFailed(c, err)
	}
	// A segment of a running session can still gain a late final.
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set(fiber.HeaderContentType, "text/vtt; charset=utf-8")
	return c.Send(body)
}

func (r *Receiver) captionsFailed(c *fiber.Ctx, err error) error {
	switch {
	case errors.Is(err, errNoSession):
		return writeError(c, fiber.StatusNotFound, "no such live session")
	case errors.Is(err, captions.ErrNotListed):
		return writeError(c, fiber.StatusNotFound, "no such segment (not listed in the playlist yet)")
	}
	return r.storeFailed(c, err)
}

// CaptionsURL is a session's signed caption URLs, as POST /v1/live/{id}/captions/url answers
// them.
type CaptionsURL struct {
	// URL is the HLS playlist's, for a player.
	URL string `json:"url"`
	// PageURL is the caption page's, for an OBS browser source.
	PageURL string `json:"page_url"`
	// ExpiresAt is when both stop working, RFC 3339 in UTC.
	ExpiresAt string `json:"expires_at"`
}

// SignCaptionsURL is the signed URLs of session id's captions under publicURL (the receiver's
// public URL, its mount prefix included; "" gives paths alone), expiring at exp (whole
// seconds), signed with key: Config.CaptionsKey, or signedurl.DeriveKey of the read token as
// the receiver derives it by default.
func SignCaptionsURL(publicURL string, key []byte, id string, exp time.Time) CaptionsURL {
	exp = exp.Truncate(time.Second)
	base := strings.TrimRight(publicURL, "/") + "/v1/live/" + url.PathEscape(id)
	q := "?" + signedurl.New(key).Query(id, exp)
	return CaptionsURL{URL: base + "/captions.m3u8" + q, PageURL: base + "/captions.html" + q, ExpiresAt: exp.UTC().Format(time.RFC3339)}
}

// captionsURL is POST /v1/live/:id/captions/url[?ttl=2h]: signed URLs of the session's
// playlist and caption page, for players and browser sources that cannot send a bearer.
func (r *Receiver) captionsURL(c *fiber.Ctx) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	ttl := DefaultCaptionsURLTTL
	if s := c.Query("ttl"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < minCaptionsURLTTL || d > MaxCaptionsURLTTL {
			return writeError(c, fiber.StatusBadRequest, fmt.Sprintf("ttl must be a duration from %s to %s", minCaptionsURLTTL, MaxCaptionsURLTTL))
		}
		ttl = d
	}
	if r.captionKey == nil {
		return writeError(c, fiber.StatusNotImplemented, "captions URLs cannot be signed: set the read token")
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	rec, err := r.cfg.Store.GetJob(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && rec.Job.Kind != api.KindLive {
		return writeError(c, fiber.StatusNotFound, "no such live session")
	}
	if err != nil {
		return r.storeFailed(c, err)
	}
	// Never c.BaseURL(): it comes from the Host header, which whoever sends the request picks.
	u := SignCaptionsURL(r.cfg.PublicURL, r.captionKey, id, r.now().Add(ttl))
	r.log.WithField("session_id", id).WithField("expires_at", u.ExpiresAt).Info("captions URL signed")
	return sendJSON(c, u)
}

// captionRoute comes first on the captions' routes: a signed URL (exp and sig in the query,
// for the session of the path) or, without one, the read API's credentials.
func (r *Receiver) captionRoute(c *fiber.Ctx) error {
	return r.guardFunc(c, func() error {
		if ok, err := r.checkCaptionAccess(c); !ok {
			if c.Request().BodyStream() != nil || c.Request().Header.ContentLength() != 0 {
				closeUnread(c)
			}
			return err
		}
		return r.withOtherBody(c)
	})
}

// signedKey marks in a request's locals that a signed URL let it in.
type signedKey struct{}

func (r *Receiver) checkCaptionAccess(c *fiber.Ctx) (bool, error) {
	exp, sig := c.Query(signedurl.ParamExpiry), c.Query(signedurl.ParamSignature)
	if exp == "" && sig == "" {
		return r.checkReadAccess(c)
	}
	key := r.clientOf(c)
	if wait := r.authLimit.wait(key); wait > 0 {
		return false, r.tooManyFailures(c, surfaceRead, wait)
	}
	if r.captionSigner == nil {
		return false, writeError(c, fiber.StatusForbidden, "signed captions URLs are off: no read token is set")
	}
	id, err := pathParam(c, "id")
	if err != nil {
		return false, writeError(c, fiber.StatusBadRequest, err.Error())
	}
	switch err := r.captionSigner.Verify(id, exp, sig, r.now()); {
	case err == nil:
		c.Locals(signedKey{}, true)
		// The URL is the credential, and no cookie rides with it: any page may load it
		// (hls.js fetches playlists and segments from the player's origin).
		c.Set(fiber.HeaderAccessControlAllowOrigin, "*")
		return true, nil
	case errors.Is(err, signedurl.ErrExpired):
		return false, writeError(c, fiber.StatusForbidden, "captions URL expired: ask POST /v1/live/{id}/captions/url for a new one")
	case errors.Is(err, signedurl.ErrSignature):
		r.authFailed(key, surfaceRead)
		return false, writeError(c, fiber.StatusForbidden, "captions URL signature does not match this session")
	default:
		r.authFailed(key, surfaceRead)
		return false, writeError(c, fiber.StatusUnauthorized, err.Error())
	}
}

// captionsEvents is GET /v1/live/:id/captions/events: the session's server-sent events,
// transcripts only (finals, and partials unless ?partials=0), for the caption page.
func (r *Receiver) captionsEvents(c *fiber.Ctx) error {
	cats := map[api.MessageCategory]bool{api.CategoryFinalTranscripts: true, api.CategoryPartialTranscripts: true}
	if c.Query("partials") == "0" {
		delete(cats, api.CategoryPartialTranscripts)
	}
	return r.openStream(c, cats)
}
