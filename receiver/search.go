package receiver

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// SearchPage is the answer of GET /v1/search: the envelope of the job list's pages (first,
// current, next) around the hits.
type SearchPage struct {
	First   string      `json:"first"`
	Current string      `json:"current"`
	Next    *string     `json:"next"`
	Items   []SearchHit `json:"items"`
}

// SearchHit is one hit of GET /v1/search: the store's hit (its text, and the same text escaped
// for HTML with the matched words in <mark>) and Link, the dashboard's job page at the
// utterance (under the public URL when one is set).
type SearchHit struct {
	store.SearchHit
	Link string `json:"link"`
}

// HitLink is the dashboard's route to a job's page at a time (seconds): the page scrolls to
// the utterance playing then and marks it.
func HitLink(jobID string, start float64) string {
	return "#/jobs/" + url.PathEscape(jobID) + "?t=" + strconv.FormatFloat(start, 'f', -1, 64)
}

// searchQuery reads GET /v1/search's parameters: q, language, translations, and the job
// list's filters and paging (api.ParseListQuery).
func searchQuery(vals url.Values) (store.SearchQuery, error) {
	lq, err := api.ParseListQuery(vals, false)
	if err != nil {
		return store.SearchQuery{}, err
	}
	q := store.SearchQuery{Text: vals.Get("q"), List: lq, Language: vals.Get("language")}
	if v := vals.Get("translations"); v != "" {
		if q.Translations, err = strconv.ParseBool(v); err != nil {
			return q, errors.New("translations must be true or false")
		}
	}
	if strings.TrimSpace(q.Text) == "" {
		return q, errors.New("q is required: the words to search for")
	}
	return q, nil
}

// search is GET /v1/search: full-text search over every stored transcript (Searcher),
// answered 501 where the store cannot search.
func (r *Receiver) search(c *fiber.Ctx) error {
	vals, err := url.ParseQuery(string(c.Request().URI().QueryString()))
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, "query string does not parse: invalid percent-encoding or separator")
	}
	q, err := searchQuery(vals)
	var ve api.ValidationErrors
	if errors.As(err, &ve) {
		return writeValidation(c, err)
	}
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, "invalid query: "+err.Error())
	}
	se, ok := r.cfg.Store.(store.Searcher)
	if !ok {
		return writeError(c, fiber.StatusNotImplemented, "search: the store does not search")
	}
	offset, limit := q.List.EffectiveOffset(), q.List.EffectiveLimit()
	q.List.Offset, q.List.Limit = &offset, &limit
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	res, err := se.Search(ctx, q)
	switch {
	case errors.Is(err, store.ErrBadQuery):
		return writeError(c, fiber.StatusBadRequest, err.Error())
	case errors.Is(err, store.ErrSearchUnavailable):
		return writeError(c, fiber.StatusNotImplemented, err.Error())
	case err != nil:
		return r.storeFailed(c, err)
	}
	base, path := strings.TrimRight(r.cfg.PublicURL, "/"), linkPath(c, "/v1/search", r.cfg.PublicURL != "")
	ui := base + strings.TrimSuffix(path, "/v1/search") + "/ui/"
	page := SearchPage{
		First:   searchPageURL(base, path, q, 0, limit),
		Current: searchPageURL(base, path, q, offset, limit),
		Items:   make([]SearchHit, len(res.Items)),
	}
	if res.More {
		next := searchPageURL(base, path, q, offset+limit, limit)
		page.Next = &next
	}
	for i, h := range res.Items {
		page.Items[i] = SearchHit{SearchHit: h, Link: ui + HitLink(h.JobID, h.Start)}
	}
	return sendJSON(c, page)
}

// searchPageURL is pageURL with the search's own parameters.
func searchPageURL(base, path string, q store.SearchQuery, offset, limit int) string {
	q.List.Offset, q.List.Limit = &offset, &limit
	v := q.List.Values()
	v.Set("q", q.Text)
	if q.Language != "" {
		v.Set("language", q.Language)
	}
	if q.Translations {
		v.Set("translations", "true")
	}
	u := url.URL{Path: path, RawQuery: v.Encode()}
	return base + u.String()
}
