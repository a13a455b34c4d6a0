// Package ui is scribehook's dashboard: hand-written HTML, CSS and JavaScript modules embedded
// in the binary (no build step), served by the receiver under /ui/, and the sign-in that turns
// the read API's bearer token into a session cookie.
//
// The browser gets the token once, on the sign-in page; the answer is a cookie that is Secure,
// HttpOnly and SameSite=Strict, whose value is not the token but a session: a random id, when it
// was issued and when it expires, signed with a key derived from the token (HMAC-SHA256), so
// every replica with the same token accepts it, changing the token signs every browser out, and
// scripts in the page never see a credential. The receiver accepts the cookie on the read API as
// it accepts the bearer header: that is what lets EventSource, <audio>, <track> and download
// links, which cannot send headers, reach it.
//
// A signature alone cannot be taken back, so signing out is kept in the store every replica
// shares (Config.Sessions): the session's id, hashed, or for "sign out everywhere" a cutoff
// before which every session is refused. Each request with the cookie asks the store. Cookies
// of the first format ("v1.<expiry>.<mac>"), which carried no id and could not be revoked, are
// refused: their holders sign in again.
//
// Unsafe requests (POST) that carry the cookie must come from the dashboard's own origin: the
// SameSite attribute keeps other sites out, the origin check keeps out other ports of the same
// host (which count as the same site).
//
// Routes (Mount):
//
//	GET  /ui/         the dashboard (index.html); /ui redirects here
//	GET  /ui/login    the sign-in page
//	POST /ui/login    form field "token" (and "next", a #/… route): sets the cookie
//	POST /ui/logout   revokes the cookie's session (form field all=1: every session) and
//	                  clears the cookie
//	GET  /ui/*        the other embedded assets
package ui

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/plainjson"
)

//go:embed assets
var assets embed.FS

// CookieName is the session cookie. The __Host- prefix makes browsers insist on Secure, Path=/
// and no Domain, so a sibling host cannot plant its own.
const CookieName = "__Host-scribehook_ui"

// DefaultSessionTTL is how long a sign-in lasts.
const DefaultSessionTTL = 12 * time.Hour

// sessionCheckTimeout bounds the store's answer about one session: a request with the cookie
// waits for it.
const sessionCheckTimeout = 5 * time.Second

// Errors of Authorized.
var (
	// ErrNoSession: no cookie, or one that is forged, expired, signed out, of the first format,
	// or made with another token.
	ErrNoSession = errors.New("no valid dashboard session")
	// ErrCrossOrigin: a valid cookie on an unsafe request from another origin.
	ErrCrossOrigin = errors.New("cross-origin request refused: the dashboard's cookie only works from the dashboard")
	// ErrSessionCheck: the store could not say whether the session was signed out. The request
	// is refused for now (a 503), not answered as if the session had ended.
	ErrSessionCheck = errors.New("dashboard session could not be checked")
)

// Sessions is where sign-outs are kept, shared by every replica (store.Sessions, which the
// SQLite and PostgreSQL stores implement). Sessions are known by the SHA-256 of their id.
type Sessions interface {
	RevokeSession(ctx context.Context, idHash []byte, expires time.Time) error
	RevokeAllSessions(ctx context.Context, before time.Time) error
	SessionRevoked(ctx context.Context, idHash []byte, issuedAt time.Time) (bool, error)
}

// Config configures New.
type Config struct {
	// Token is the read API's bearer token; empty: nobody can sign in.
	Token string
	// Sessions keeps sign-outs. Nil: a sign-out only clears the browser's cookie, and a copy
	// of the cookie stays valid until it expires (logged at each sign-out).
	Sessions Sessions
	// TTL is the life of a session (DefaultSessionTTL when 0).
	TTL time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Logger is where sign-outs, and those the store could not keep, are logged (discarded
	// when nil).
	Logger logrus.FieldLogger
}

// UI serves the dashboard and checks its sessions.
type UI struct {
	key       []byte // HMAC key of session values; nil when there is no token
	tokenHash [sha256.Size]byte
	sessions  Sessions
	ttl       time.Duration
	now       func() time.Time
	log       *logrus.Entry
	files     map[string]asset
}

// session is what a valid cookie says.
type session struct {
	issued   time.Time
	expires  time.Time
	idHashed [sha256.Size]byte // of the 128 random bits of its id: what the store keeps
}

type asset struct {
	body  []byte
	ctype string
	etag  string
}

// New builds the dashboard for cfg.
func New(cfg Config) *UI {
	u := &UI{sessions: cfg.Sessions, ttl: cfg.TTL, now: cfg.Now, log: logx.OrDiscard(cfg.Logger), files: map[string]asset{}}
	if u.ttl <= 0 {
		u.ttl = DefaultSessionTTL
	}
	if u.now == nil {
		u.now = time.Now
	}
	if cfg.Token != "" {
		mac := hmac.New(sha256.New, []byte(cfg.Token))
		mac.Write([]byte("scribehook dashboard session key v1"))
		u.key = mac.Sum(nil)
		u.tokenHash = sha256.Sum256([]byte(cfg.Token))
	}
	_ = fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ctype := mime.TypeByExtension(path.Ext(p))
		switch path.Ext(p) { // not left to the host's mime.types
		case ".js":
			ctype = "text/javascript; charset=utf-8"
		case ".css":
			ctype = "text/css; charset=utf-8"
		case ".html":
			ctype = "text/html; charset=utf-8"
		case ".svg":
			ctype = "image/svg+xml"
		}
		u.files[strings.TrimPrefix(p, "assets/")] = asset{body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	return u
}

// Mount registers the dashboard's routes on r, each behind the handlers of before (the
// receiver's own guard: a route mounted in another app gets nothing else). Every link and
// fetch of the pages is relative to the page, so the dashboard works under any prefix.
func (u *UI) Mount(r fiber.Router, before ...fiber.Handler) {
	route := func(h fiber.Handler) []fiber.Handler {
		return append(append([]fiber.Handler(nil), before...), h)
	}
	r.Get("/ui", route(func(c *fiber.Ctx) error {
		// Routing is not strict: /ui and /ui/ both land here. Relative links need the slash.
		// The route's own path carries whatever prefix the dashboard is mounted under.
		if !strings.HasSuffix(string(c.Request().URI().Path()), "/") {
			return c.Redirect(strings.TrimRight(c.Route().Path, "/")+"/", fiber.StatusMovedPermanently)
		}
		return u.serve(c, "index.html")
	})...)
	r.Get("/ui/login", route(func(c *fiber.Ctx) error { return u.serve(c, "login.html") })...)
	r.Post("/ui/login", route(u.login)...)
	r.Post("/ui/logout", route(u.logout)...)
	r.Get("/ui/*", route(func(c *fiber.Ctx) error { return u.serve(c, c.Params("*")) })...)
}

// securityHeaders apply to every page and asset: nothing but the dashboard's own scripts and
// styles run; audio may come from anywhere, as the service's files do.
func securityHeaders(c *fiber.Ctx) {
	c.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; media-src 'self' http: https: blob:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("Referrer-Policy", "no-referrer")
	c.Set("X-Frame-Options", "DENY")
}

func (u *UI) serve(c *fiber.Ctx, name string) error {
	if name == "" {
		name = "index.html"
	}
	a, ok := u.files[name]
	if !ok {
		return sendError(c, fiber.StatusNotFound, "no such dashboard file: "+name)
	}
	securityHeaders(c)
	c.Set(fiber.HeaderCacheControl, "no-cache") // revalidate: the binary may have changed
	c.Set(fiber.HeaderETag, a.etag)
	if match := c.Get(fiber.HeaderIfNoneMatch); match != "" && strings.Contains(match, a.etag) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, a.ctype)
	return c.Send(a.body)
}

// login checks the token of the sign-in form and answers with the cookie, or sends the form
// back with the reason.
// wrongTokenKey marks in a request's locals a sign-in whose token was wrong (WrongToken).
type wrongTokenKey struct{}

// WrongToken reports whether c was a sign-in with a wrong token, once the sign-in route ran:
// what the receiver's failure limit counts.
func WrongToken(c *fiber.Ctx) bool { return c.Locals(wrongTokenKey{}) != nil }

func (u *UI) login(c *fiber.Ctx) error {
	next := safeNext(c.FormValue("next"))
	back := func(reason string) error {
		q := url.Values{"error": {reason}}
		if next != "" {
			q.Set("next", next)
		}
		return c.Redirect("login?"+q.Encode(), fiber.StatusSeeOther)
	}
	switch {
	case !sameOrigin(c):
		return back("origin")
	case u.key == nil:
		return back("disabled")
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(c.FormValue("token"))))
	if subtle.ConstantTimeCompare(sum[:], u.tokenHash[:]) != 1 {
		c.Locals(wrongTokenKey{}, true)
		return back("invalid")
	}
	now := u.now()
	exp := now.Add(u.ttl)
	value, err := u.sign(now, exp)
	if err != nil {
		return err
	}
	c.Cookie(&fiber.Cookie{
		Name: CookieName, Value: value, Path: "/", MaxAge: int(u.ttl / time.Second), Expires: exp,
		Secure: true, HTTPOnly: true, SameSite: fiber.CookieSameSiteStrictMode,
	})
	// ?from=login lets the page tell a cookie the browser refused from a session that expired.
	return c.Redirect("./?from=login"+next, fiber.StatusSeeOther)
}

// logout revokes the session of the cookie it carries, or with all=1 every session issued
// until now, then clears the cookie. A cookie that is not valid has nothing to revoke; signing
// out everywhere takes a valid session, so that nobody without one can end everyone's. When the
// store cannot keep the sign-out, the cookie is left in place and the answer is a 503: the
// browser can sign out again, rather than believe it did while a copy of the cookie still works.
func (u *UI) logout(c *fiber.Ctx) error {
	if !sameOrigin(c) {
		return sendError(c, fiber.StatusForbidden, ErrCrossOrigin.Error())
	}
	s, ok := u.parse(c.Cookies(CookieName))
	all := c.FormValue("all") == "1"
	switch {
	case all && !ok:
		return sendError(c, fiber.StatusUnauthorized, "signing out everywhere takes a valid dashboard session: sign in first")
	case ok && u.sessions == nil:
		u.log.Warn("dashboard: sign-out cleared the cookie only: no session store is configured, so a copy of the cookie stays valid until it expires")
		if all {
			return sendError(c, fiber.StatusNotImplemented, "signing out everywhere needs a store that keeps sessions: change the read token to sign every browser out")
		}
	case ok:
		ctx, cancel := context.WithTimeout(c.UserContext(), sessionCheckTimeout)
		defer cancel()
		if revoked, err := u.sessions.SessionRevoked(ctx, s.idHashed[:], s.issued); err == nil && revoked {
			if all {
				return sendError(c, fiber.StatusUnauthorized, "signing out everywhere takes a valid dashboard session: sign in first")
			}
			break // signed out already (another tab)
		}
		var err error
		if all {
			err = u.sessions.RevokeAllSessions(ctx, u.now())
		} else {
			err = u.sessions.RevokeSession(ctx, s.idHashed[:], s.expires)
		}
		if err != nil {
			u.log.WithError(err).WithField("all", all).Error("dashboard: sign-out could not be stored")
			return sendError(c, fiber.StatusServiceUnavailable, "the sign-out could not be stored: try again")
		}
		u.log.WithField("all", all).Info("dashboard: signed out")
	}
	c.Cookie(&fiber.Cookie{
		Name: CookieName, Value: "", Path: "/", Expires: time.Unix(1, 0),
		Secure: true, HTTPOnly: true, SameSite: fiber.CookieSameSiteStrictMode,
	})
	return c.Redirect("login?signed_out=1", fiber.StatusSeeOther)
}

// safeNext keeps a dashboard route (#/…) to return to after signing in, nothing else: the
// redirect never leaves /ui/.
func safeNext(s string) string {
	if !strings.HasPrefix(s, "#/") || len(s) > 512 {
		return ""
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return ""
		}
	}
	return s
}

// Authorized reports whether the request carries a valid session cookie that was not signed
// out: nil, ErrNoSession, ErrCrossOrigin for an unsafe request from elsewhere, or an error
// wrapping ErrSessionCheck when the store does not answer. The store is asked last, so that a
// forged or expired cookie costs no query.
func (u *UI) Authorized(c *fiber.Ctx) error {
	s, ok := u.parse(c.Cookies(CookieName))
	if !ok {
		return ErrNoSession
	}
	if !sameOrigin(c) {
		return ErrCrossOrigin
	}
	if u.sessions == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), sessionCheckTimeout)
	defer cancel()
	revoked, err := u.sessions.SessionRevoked(ctx, s.idHashed[:], s.issued)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", ErrSessionCheck, err)
	case revoked:
		return ErrNoSession
	}
	return nil
}

// sign makes a session value for a new session issued at now:
// "v2.<base64url id>.<unix issued-at>.<unix expiry>.<base64url HMAC of everything before>".
func (u *UI) sign(now, exp time.Time) (string, error) {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return "", fmt.Errorf("session id: %w", err)
	}
	payload := "v2." + base64.RawURLEncoding.EncodeToString(id) + "." + strconv.FormatInt(now.Unix(), 10) +
		"." + strconv.FormatInt(exp.Unix(), 10)
	return payload + "." + base64.RawURLEncoding.EncodeToString(u.mac(payload)), nil
}

func (u *UI) mac(payload string) []byte {
	m := hmac.New(sha256.New, u.key)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// parse checks a session value's signature and expiry, and reads it. Only the second format
// is accepted: a first-format value has no id to revoke.
func (u *UI) parse(v string) (session, bool) {
	if u.key == nil {
		return session{}, false
	}
	i := strings.LastIndexByte(v, '.')
	if i < 0 || !strings.HasPrefix(v, "v2.") {
		return session{}, false
	}
	payload, sig := v[:i], v[i+1:]
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, u.mac(payload)) {
		return session{}, false
	}
	parts := strings.Split(payload, ".")
	if len(parts) != 4 {
		return session{}, false
	}
	id, err := base64.RawURLEncoding.DecodeString(parts[1])
	issued, err1 := strconv.ParseInt(parts[2], 10, 64)
	exp, err2 := strconv.ParseInt(parts[3], 10, 64)
	if err != nil || err1 != nil || err2 != nil || len(id) != 16 {
		return session{}, false
	}
	s := session{issued: time.Unix(issued, 0), expires: time.Unix(exp, 0), idHashed: sha256.Sum256(id)}
	if !u.now().Before(s.expires) {
		return session{}, false
	}
	return s, true
}

// sameOrigin is the check of Go's http.CrossOriginProtection: safe methods pass; browsers say
// where a request comes from in Sec-Fetch-Site or, older ones, in Origin; a request with
// neither is not from a browser, where cookies cannot be ridden.
func sameOrigin(c *fiber.Ctx) bool {
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return true
	}
	switch c.Get("Sec-Fetch-Site") {
	case "":
	case "same-origin", "none":
		return true
	default:
		return false
	}
	origin := c.Get(fiber.HeaderOrigin)
	if origin == "" {
		return true
	}
	o, err := url.Parse(origin)
	return err == nil && o.Host != "" && strings.EqualFold(o.Host, string(c.Request().Host()))
}

// sendError answers {"error": msg, "status": status} as the receiver does (no HTML escaping),
// whatever JSON encoder the app the dashboard is mounted in has.
func sendError(c *fiber.Ctx, status int, msg string) error {
	b, err := plainjson.Marshal(fiber.Map{"error": msg, "status": status})
	if err != nil {
		return fmt.Errorf("encode error: %w", err)
	}
	c.Status(status).Response().SetBodyRaw(b)
	c.Response().Header.SetContentType(fiber.MIMEApplicationJSON)
	return nil
}

// Signed reports whether v carries a signature made with this dashboard's key, whatever its
// expiry and whether it was signed out: a cookie that is not signed is a forgery (or was made
// with another read token), one that is signed but refused was a real session once. The
// receiver counts only the first as a wrong credential.
func (u *UI) Signed(v string) bool {
	i := strings.LastIndexByte(v, '.')
	if u.key == nil || i < 0 || !strings.HasPrefix(v, "v1.") && !strings.HasPrefix(v, "v2.") {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(v[i+1:])
	return err == nil && hmac.Equal(got, u.mac(v[:i]))
}
