package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// Bounds of GET /v1/live/:id/messages.
const (
	defaultMessagesLimit = 100
	maxMessagesLimit     = 1000
)

// listJobs is GET /v1/jobs: the service's list filters and page envelope over the local store.
func (r *Receiver) listJobs(c *fiber.Ctx) error {
	vals, err := url.ParseQuery(string(c.Request().URI().QueryString()))
	if err != nil {
		// Not the parser's message: it quotes the query.
		return writeError(c, fiber.StatusBadRequest, "query string does not parse: invalid percent-encoding or separator")
	}
	q, err := api.ParseListQuery(vals, false)
	if err == nil {
		err = q.Validate(false)
	}
	if err != nil {
		return writeValidation(c, err)
	}
	offset, limit := q.EffectiveOffset(), q.EffectiveLimit()
	q.Offset, q.Limit = &offset, &limit
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	jobs, err := r.cfg.Store.ListJobs(ctx, q)
	if err != nil {
		return r.storeFailed(c, err)
	}
	// Never c.BaseURL(): it comes from the Host header, which whoever sends the request picks.
	base, path := strings.TrimRight(r.cfg.PublicURL, "/"), linkPath(c, "/v1/jobs", r.cfg.PublicURL != "")
	page := api.Page{
		First:   pageURL(base, path, q, 0, limit),
		Current: pageURL(base, path, q, offset, limit),
	}
	if jobs.More {
		next := pageURL(base, path, q, offset+limit, limit)
		page.Next = &next
	}
	b, err := pageJSON(page, jobs.Items)
	if err != nil {
		return fmt.Errorf("encode answer: %w", err)
	}
	c.Response().SetBodyRaw(b)
	c.Response().Header.SetContentType(fiber.MIMEApplicationJSON)
	return nil
}

// pageJSON writes page with recs as its items, each record assembled from the bytes it holds
// (api.AppendJob, as GET /v1/jobs/{id} writes it): its result goes out byte for byte, and the
// page is written once into a buffer of about its size, not re-encoded.
func pageJSON(page api.Page, recs []store.JobRecord) ([]byte, error) {
	const tail = `null}`
	page.Items = nil
	head, err := marshalPlain(page)
	if err != nil {
		return nil, err
	}
	if !bytes.HasSuffix(head, []byte(`"items":`+tail)) {
		return nil, errors.New("page envelope does not end with its items")
	}
	size := len(head) + 2
	for i := range recs {
		j := &recs[i].Job
		size += 4096 + len(j.Result) + len(j.RequestParams) + len(j.CustomMetadata) + len(j.PostSessionMetadata)
	}
	out := append(make([]byte, 0, size), head[:len(head)-len(tail)]...)
	out = append(out, '[')
	for i := range recs {
		if i > 0 {
			out = append(out, ',')
		}
		if out, err = api.AppendJob(out, &recs[i].Job, true); err != nil {
			return nil, err
		}
	}
	return append(out, "]}"...), nil
}

// mountPrefixKey holds in a request's locals the prefix http.StripPrefix took off a request
// that Handler passes to Fiber: the Fiber app does not see it in the path.
type mountPrefixKey struct{}

// linkPath is the path of c to put in a link, c being on the route whose path, relative to the
// receiver's root, is route: relative to that root when the link starts from the public URL
// (which includes any prefix the receiver is mounted under, as callback URLs do), the whole path
// the client sent otherwise.
func linkPath(c *fiber.Ctx, route string, fromPublicURL bool) string {
	p := c.Path()
	if prefix, ok := c.Locals(mountPrefixKey{}).(string); ok {
		if fromPublicURL {
			return p
		}
		return prefix + p
	}
	if !fromPublicURL || c.Route() == nil {
		return p
	}
	prefix := strings.TrimSuffix(c.Route().Path, route)
	if len(p) >= len(prefix) && strings.EqualFold(p[:len(prefix)], prefix) {
		return p[len(prefix):]
	}
	return p
}

// pageURL is a list URL carrying the filters, offset and limit, like the service's: absolute
// under base (the configured public URL), or only path and query when base is empty.
func pageURL(base, path string, q api.ListQuery, offset, limit int) string {
	q.Offset, q.Limit = &offset, &limit
	u := url.URL{Path: path, RawQuery: q.Values().Encode()}
	return base + u.String()
}

// pathParam is the path parameter name of c, unescaped: routing goes by the escaped path (a
// job id may hold a slash, written %2F), so Fiber hands the parameter over as it was sent. An
// id with reserved characters (a job of a static route, named by another system) is only
// found by its unescaped form.
func pathParam(c *fiber.Ctx, name string) (string, error) {
	v, err := url.PathUnescape(c.Params(name))
	if err != nil {
		return "", fmt.Errorf("%s: invalid percent-encoding in the path", name)
	}
	return v, nil
}

func writeValidation(c *fiber.Ctx, err error) error {
	body := apiError{Error: "invalid query: " + err.Error(), Status: fiber.StatusBadRequest}
	var ve api.ValidationErrors
	if errors.As(err, &ve) {
		body.ValidationErrors = ve.Sentences()
	}
	return sendJSON(c.Status(fiber.StatusBadRequest), body)
}

func (r *Receiver) storeFailed(c *fiber.Ctx, err error) error {
	r.log.WithError(err).WithField("path", c.Path()).Error("read API: store failed")
	return writeError(c, fiber.StatusServiceUnavailable, "store unavailable")
}

// LocalView is the "local" member of a job in GET /v1/jobs/:id (and in the CLI's JSON): what
// scribehook knows beyond the service's record.
type LocalView struct {
	store.Local
	Artifacts []ArtifactView `json:"artifacts"`
	// LiveMessages is the number of a session's stored messages, where counted (the CLI).
	LiveMessages *int64 `json:"live_messages,omitempty"`
	// Speakers are the names shown for the job's speakers: those of its custom_metadata
	// (api.SpeakersMetadataKey) with the stored ones (PUT /v1/jobs/:id/speakers) on top.
	Speakers api.SpeakerNames `json:"speakers,omitempty"`
	// SubtitlesRevision is the revision of the subtitles rendered with the stored names (the
	// subtitles.ready event's revision); 0 until a naming rendered them again.
	SubtitlesRevision int64 `json:"subtitles_revision,omitempty"`
}

// WithSpeakers is v with the job's names: those of its custom_metadata, stored ones on top.
func (v LocalView) WithSpeakers(j api.Job, stored store.Speakers) LocalView {
	meta, _ := api.SpeakerNamesFromMetadata(j.CustomMetadata) // invalid ones are not shown
	v.Speakers, v.SubtitlesRevision = meta.Merge(stored.Names), stored.Revision
	return v
}

// ArtifactView is one artifact of a job in its LocalView.
type ArtifactView struct {
	Name     string `json:"name"`
	Format   string `json:"format"`
	Language string `json:"language,omitempty"`
	Path     string `json:"path"`
	Size     int64  `json:"size"`
}

// NewLocalView is the local member of a job with its artifacts.
func NewLocalView(local store.Local, arts []store.Artifact) LocalView {
	v := LocalView{Local: local, Artifacts: make([]ArtifactView, 0, len(arts))}
	for _, a := range arts {
		v.Artifacts = append(v.Artifacts, ArtifactView{Name: a.Name, Format: a.Format, Language: a.Language, Path: a.Path, Size: a.Size})
	}
	return v
}

// getJob is GET /v1/jobs/:id: the service's job record shape plus a local object.
func (r *Receiver) getJob(c *fiber.Ctx) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	rec, arts, ok, err := r.storedJob(c, id)
	if !ok {
		return err
	}
	sp, err := r.speakersOf(id)
	if err != nil {
		return r.storeFailed(c, err)
	}
	b, err := JobJSON(rec.Job, NewLocalView(rec.Local, arts).WithSpeakers(rec.Job, sp))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(b)
}

// storedJob reads job id and its artifacts for a read route. ok is false when it has answered c
// instead, the job being unknown or the store failing; err is then the answer's.
func (r *Receiver) storedJob(c *fiber.Ctx, id string) (rec store.JobRecord, arts []store.Artifact, ok bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	rec, err = r.cfg.Store.GetJob(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return rec, nil, false, writeError(c, fiber.StatusNotFound, "job not found")
	}
	if err != nil {
		return rec, nil, false, r.storeFailed(c, err)
	}
	if arts, err = r.cfg.Store.Artifacts(ctx, id); err != nil {
		return rec, nil, false, r.storeFailed(c, err)
	}
	return rec, arts, true, nil
}

// JobJSON writes the job exactly as the service would and appends "local" as its last member,
// so that the service's members keep their order and unknown members survive. The record is
// assembled from the bytes held (api.AppendJob): its result goes out byte for byte as the
// service sent it, into one buffer of about the final size.
func JobJSON(j api.Job, local LocalView) (json.RawMessage, error) {
	if _, clash := j.Extra["local"]; clash {
		j.Extra = maps.Clone(j.Extra)
		delete(j.Extra, "local")
	}
	lb, err := json.Marshal(local)
	if err != nil {
		return nil, fmt.Errorf("encode job %s: %w", j.ID, err)
	}
	size := 4096 + len(j.Result) + len(j.RequestParams) + len(j.CustomMetadata) + len(j.PostSessionMetadata) + len(lb)
	for k, v := range j.Extra {
		size += len(k) + len(v) + 4
	}
	out, err := api.AppendJob(make([]byte, 0, size), &j, true)
	if err != nil {
		return nil, fmt.Errorf("encode job %s: %w", j.ID, err)
	}
	out = out[:len(out)-1] // the record's closing brace; it has members (id at least)
	out = append(out, `,"local":`...)
	out = append(out, lb...)
	return append(out, '}'), nil
}

// messageView is one stored live message as the read API and the event stream show it.
type messageView struct {
	Seq       int64               `json:"seq"`
	Type      api.MessageType     `json:"type"`
	Category  api.MessageCategory `json:"category"`
	CreatedAt api.Time            `json:"created_at"`
	Payload   json.RawMessage     `json:"payload"`
}

func viewOf(m store.LiveMessage) messageView {
	v := messageView{Seq: m.Seq, Type: m.Type, Category: m.Category, CreatedAt: api.NewTime(m.CreatedAt)}
	if len(bytes.TrimSpace(m.Payload)) > 0 {
		v.Payload = m.Payload
	}
	return v
}

// liveMessages is GET /v1/live/:id/messages?after=SEQ&limit=N: stored messages in session order.
func (r *Receiver) liveMessages(c *fiber.Ctx) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	after, err := queryInt(c, "after", 0, 0, -1)
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	limit, err := queryInt(c, "limit", defaultMessagesLimit, 1, maxMessagesLimit)
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	msgs, err := r.cfg.Store.LiveMessages(ctx, id, int64(after), limit)
	if err != nil {
		return r.storeFailed(c, err)
	}
	out := make([]messageView, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, viewOf(m))
	}
	return sendJSON(c, out)
}

// queryInt reads an integer parameter between lo and hi (hi < 0: no upper bound), def when
// absent.
func queryInt(c *fiber.Ctx, key string, def, lo, hi int) (int, error) {
	s := strings.TrimSpace(c.Query(key))
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%s must be an integer", key)
	case n < lo:
		return 0, fmt.Errorf("%s must be at least %d", key, lo)
	case hi >= 0 && n > hi:
		return 0, fmt.Errorf("%s must be at most %d", key, hi)
	}
	return n, nil
}
