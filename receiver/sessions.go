package receiver

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
)

// revokeSessions is POST /v1/sessions/revoke: every dashboard session issued until now is
// signed out, on every replica sharing the store. It answers {"revoked_before": RFC 3339}.
func (r *Receiver) revokeSessions(c *fiber.Ctx) error {
	if r.cfg.Sessions == nil {
		return writeError(c, fiber.StatusNotImplemented, "the store keeps no dashboard sessions: change the read token to sign every browser out")
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	// A cookie's issue time has whole seconds: a session issued in the same second as the
	// cutoff is refused too, and signing in works again from the next second.
	before := r.now()
	if err := r.cfg.Sessions.RevokeAllSessions(ctx, before); err != nil {
		return r.storeFailed(c, err)
	}
	r.log.WithField("revoked_before", before.UTC().Format(time.RFC3339)).Info("read API: every dashboard session revoked")
	return sendJSON(c, fiber.Map{"revoked_before": before.UTC().Format(time.RFC3339)})
}
