package receiver

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"
	"github.com/sirupsen/logrus"
)

// PrefixError is what Mount finds when the routes are mounted under a prefix that
// Config.PublicURL's path does not end with: the service calls back at public_url +
// /v1/callbacks/<token>, which the parent app then answers itself (404), and a job submitted
// with that URL waits for a callback that never comes.
type PrefixError struct {
	// Prefix is the router's prefix ("/hooks").
	Prefix string
	// PublicPath is the path of Config.PublicURL ("" for none).
	PublicPath string
}

func (e *PrefixError) Error() string {
	return fmt.Sprintf("routes mounted under %q, but public_url's path %q does not end with it: the service's callbacks would miss them (public_url must include the prefix)",
		e.Prefix, e.PublicPath)
}

// mountChecks keeps what Mount found wrong, for Check.
type mountChecks struct {
	mu   sync.Mutex
	errs []error
}

// routerPrefix is the path prefix of rt as far as Mount can know it: a group's prefix
// (nested groups included), an app's mount path. ok is false for a router of another kind.
// A group of an app that is itself mounted later is not known to be under that app's path.
func routerPrefix(rt fiber.Router) (prefix string, ok bool) {
	switch r := rt.(type) {
	case *fiber.Group:
		return r.Prefix, true
	case *fiber.App:
		return r.MountPath(), true
	}
	return "", false
}

// checkPrefix compares the prefix Mount registers under with the public URL's path. Only a
// public path that does not end with the prefix is wrong: a longer one is a proxy in front
// that strips the rest (https://example.com/base/hooks reaching /hooks). The warning names
// the two paths, never the URL's host or credentials.
func (r *Receiver) checkPrefix(rt fiber.Router) {
	prefix, ok := routerPrefix(rt)
	if !ok || r.cfg.PublicURL == "" {
		return
	}
	u, err := url.Parse(r.cfg.PublicURL)
	if err != nil {
		return // New's caller validated it; nothing to compare with
	}
	prefix = strings.TrimRight(prefix, "/")
	public := strings.TrimRight(u.Path, "/")
	if len(public) >= len(prefix) && strings.EqualFold(public[len(public)-len(prefix):], prefix) {
		return
	}
	perr := &PrefixError{Prefix: prefix, PublicPath: public}
	r.log.WithFields(logrus.Fields{"prefix": prefix, "public_url_path": public}).
		Warn("mounted under a prefix public_url does not end with: the service's callbacks will not reach these routes; set public_url to where they are mounted")
	r.mounts.mu.Lock()
	r.mounts.errs = append(r.mounts.errs, perr)
	r.mounts.mu.Unlock()
}

// Check reports what Mount found wrong with where the routes were mounted: a *PrefixError for
// each router whose prefix Config.PublicURL's path does not end with (logged as a warning
// when Mount was called too). It is nil when nothing was found, or nothing could be checked
// (a Handler under http.StripPrefix: the receiver never sees the prefix).
func (r *Receiver) Check() error {
	r.mounts.mu.Lock()
	defer r.mounts.mu.Unlock()
	return errors.Join(r.mounts.errs...)
}
