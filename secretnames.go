package scribehook

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/scribehook/scribehook/configs"
)

// secretNames names the kit's secrets in its warnings and errors. Read from the environment,
// a secret is named by the variable the configuration gives for it, which is what the operator
// sets; given by the program (WithSecrets), by its field of configs.Secrets: no variable was
// read, and naming one would send the reader to the wrong place.
type secretNames struct {
	cfg   configs.Config
	given bool // WithSecrets
}

func (n secretNames) apiKey() string {
	if n.given {
		return "the service API key (WithSecrets APIKey)"
	}
	return n.cfg.Service.APIKeyEnv
}

func (n secretNames) readToken() string {
	if n.given {
		return "the read token (WithSecrets ReadToken)"
	}
	return n.cfg.ReadTokenEnv
}

// checkStrength is configs.Config.CheckStrength, or for secrets the program gave, the same checks of
// every route and sink secret it gave, named by their fields.
func (n secretNames) checkStrength(s configs.Secrets) error {
	if !n.given {
		return n.cfg.CheckStrength(s)
	}
	var errs []error
	weak := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s is too weak: %w; make one with: scribehook token new (or: openssl rand -base64 32)", what, err))
		}
	}
	if s.ReadToken != "" {
		weak("the read token (WithSecrets ReadToken)", configs.CheckToken(s.ReadToken))
	}
	for _, name := range slices.Sorted(maps.Keys(s.Routes)) {
		r := s.Routes[name]
		if r.Token != "" {
			weak(fmt.Sprintf("route %s's token (WithSecrets Routes[%q].Token)", name, name), configs.CheckToken(r.Token))
		}
		for i, sec := range r.SigningSecrets {
			weak(fmt.Sprintf("route %s's signing secret %d (WithSecrets Routes[%q].SigningSecrets[%d])", name, i+1, name, i),
				configs.CheckSigningSecret(sec))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Sinks)) {
		if sec := s.Sinks[name]; sec != "" {
			weak(fmt.Sprintf("sink %s's signing secret (WithSecrets Sinks[%q])", name, name), configs.CheckSigningSecret(sec))
		}
	}
	return errors.Join(errs...)
}
