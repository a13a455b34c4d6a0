package receiver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/signature"
	"github.com/scribehook/scribehook/store"
)

// jobRoute is the route name of deliveries authenticated by a per-job token.
const jobRoute = "job"

// staticRoute is a configured Route ready for matching. Only the token's hash is kept, so that
// comparisons take the same time whatever the length of the guess.
type staticRoute struct {
	name      string
	tokenHash [sha256.Size]byte
	verifier  *signature.Verifier // nil: the route's deliveries are not signed
}

func compileRoutes(routes []Route) ([]staticRoute, error) {
	out := make([]staticRoute, 0, len(routes))
	seen := map[string]bool{}
	for i, rt := range routes {
		switch {
		case rt.Name == "":
			return nil, fmt.Errorf("route %d: name is empty", i)
		case rt.Name == jobRoute:
			return nil, fmt.Errorf("route %q: the name is reserved for per-job tokens", rt.Name)
		case seen[rt.Name]:
			return nil, fmt.Errorf("route %q: name is used twice", rt.Name)
		case rt.Token == "":
			return nil, fmt.Errorf("route %q: token is empty", rt.Name)
		}
		seen[rt.Name] = true
		sr := staticRoute{name: rt.Name, tokenHash: sha256.Sum256([]byte(rt.Token))}
		if len(rt.SigningSecrets) > 0 {
			v, err := signature.NewVerifier(rt.SigningSecrets...)
			if err != nil {
				// The secret itself never goes into the message.
				return nil, fmt.Errorf("route %q: signing %w", rt.Name, err)
			}
			sr.verifier = v
		}
		out = append(out, sr)
	}
	return out, nil
}

// caller is who sent a delivery, as far as its token tells.
type caller struct {
	route    string
	verifier *signature.Verifier // set for a static route with signing secrets
	// hash and token are set for per-job tokens.
	hash  []byte
	token store.Token
}

// msgUnknownToken is the answer to a token no route or job has: a guess.
const msgUnknownToken = "unknown callback token"

// authError is a 401: its message is safe to show (it never contains the token). err, when
// set, is the refusal it reports (a signature's, whose reason errors.Is finds).
type authError struct {
	msg string
	err error
}

func (e *authError) Error() string { return e.msg }
func (e *authError) Unwrap() error { return e.err }

func unauthorized(msg string) error { return &authError{msg: msg} }

// authenticate finds the static route or the per-job token named by token. An error is an
// *authError, or a store failure that deserves a 503.
func (r *Receiver) authenticate(ctx context.Context, token string) (caller, error) {
	if token == "" {
		return caller{}, unauthorized("missing callback token")
	}
	// Compare against every route without stopping at a match, so timing does not tell how
	// many routes precede the right one.
	sum := sha256.Sum256([]byte(token))
	match := -1
	for i := range r.routes {
		if subtle.ConstantTimeCompare(sum[:], r.routes[i].tokenHash[:]) == 1 {
			match = i
		}
	}
	if match >= 0 {
		rt := r.routes[match]
		return caller{route: rt.name, verifier: rt.verifier}, nil
	}
	hash := store.HashToken(token)
	tok, err := r.cfg.Store.LookupToken(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return caller{}, unauthorized(msgUnknownToken)
	case err != nil:
		return caller{}, fmt.Errorf("look up token: %w", err)
	case !tok.RevokedAt.IsZero():
		return caller{}, unauthorized("callback token is revoked")
	case r.now().Sub(tok.CreatedAt) > r.tokenTTL:
		// Its job's callbacks, and the service's retries of them, came long ago, or never will.
		return caller{}, unauthorized("callback token has expired")
	}
	return caller{route: jobRoute, hash: hash, token: tok}, nil
}

// tokenKinds are the callback shapes a per-job token of each job kind may send: the service
// sends a pre-recorded job's result or error, and a live session's messages, never the other's
// and never an account webhook (those come on a static route).
var tokenKinds = map[api.JobKind][]api.CallbackKind{
	api.KindPreRecorded: {api.CallbackJobSuccess, api.CallbackJobError},
	api.KindLive:        {api.CallbackLiveMessage},
}

// checkJob makes sure a per-job token only serves its own job and its kind of callbacks,
// binding an unbound token to the job of its first delivery. A quarantined delivery (no kind,
// no job) passes: it is kept for a look, and applies nothing.
func (r *Receiver) checkJob(ctx context.Context, who caller, d store.Delivery) error {
	if who.route != jobRoute || d.Kind == "" {
		return nil
	}
	if !slices.Contains(tokenKinds[who.token.Kind], d.Kind) {
		return unauthorized(fmt.Sprintf("token of a %s job cannot send a %s callback", who.token.Kind, d.Kind))
	}
	jobID := d.JobID
	if who.token.JobID != "" {
		if who.token.JobID != jobID {
			return unauthorized("token is for another job")
		}
		return nil
	}
	err := r.cfg.Store.BindToken(ctx, who.hash, jobID)
	switch {
	case errors.Is(err, store.ErrTokenBound):
		// Another delivery bound it first, to a different job.
		return unauthorized("token is for another job")
	case err != nil:
		return fmt.Errorf("bind token: %w", err)
	}
	return nil
}

// checkReadToken checks the bearer token of the local read API: ok, or the answer it wrote.
func (r *Receiver) checkReadToken(c *fiber.Ctx) (ok bool, err error) {
	if !r.readOn {
		return false, writeError(c, fiber.StatusServiceUnavailable, "read API disabled: set the read token")
	}
	auth := c.Get(fiber.HeaderAuthorization)
	scheme, tok, found := strings.Cut(auth, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="scribehook"`)
		return false, writeError(c, fiber.StatusUnauthorized, "missing bearer token")
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if subtle.ConstantTimeCompare(sum[:], r.readToken[:]) != 1 {
		r.authFailed(r.clientOf(c), surfaceRead)
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="scribehook", error="invalid_token"`)
		return false, writeError(c, fiber.StatusUnauthorized, "invalid bearer token")
	}
	return true, nil
}
