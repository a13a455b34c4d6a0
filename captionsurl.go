package scribehook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/captions/signedurl"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/store"
)

// ErrNotLiveSession is CaptionsURL's error for an id that names no live session of the store.
var ErrNotLiveSession = errors.New("no such live session")

// CaptionsURL signs the URLs of a live session's captions (its HLS playlist and its caption
// page) as serve's POST /v1/live/{id}/captions/url does, for a player or an OBS browser source
// that cannot send the read token: under cfg.PublicURL, valid for ttl from now, signed with a
// key derived from readToken (so that serve, with the same read token, accepts them, and a new
// read token revokes them). The session must be in st.
func CaptionsURL(ctx context.Context, st store.JobReader, cfg configs.Config, readToken, sessionID string, ttl time.Duration, now time.Time) (receiver.CaptionsURL, error) {
	if readToken == "" {
		return receiver.CaptionsURL{}, fmt.Errorf("%s is not set: captions URLs are signed with a key derived from the read token", cfg.ReadTokenEnv)
	}
	if ttl < time.Minute || ttl > receiver.MaxCaptionsURLTTL {
		return receiver.CaptionsURL{}, fmt.Errorf("ttl must be from 1m0s to %s (got %s)", receiver.MaxCaptionsURLTTL, ttl)
	}
	rec, err := st.GetJob(ctx, sessionID)
	if errors.Is(err, store.ErrNotFound) || err == nil && rec.Job.Kind != api.KindLive {
		return receiver.CaptionsURL{}, fmt.Errorf("%w: %s", ErrNotLiveSession, sessionID)
	}
	if err != nil {
		return receiver.CaptionsURL{}, fmt.Errorf("read session %s: %w", sessionID, err)
	}
	return receiver.SignCaptionsURL(cfg.PublicURL, signedurl.DeriveKey(readToken), sessionID, now.Add(ttl)), nil
}
