package netguard

import (
	"errors"
	"net/url"
)

// RedactURL is rawURL as a log line or an error may show it: without user info, query or
// fragment, where a URL chosen by someone else (a signed audio URL, a webhook's token, a
// redirect's target) carries its secrets.
func RedactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	u.RawQuery = ""
	u.ForceQuery = false
	u.Fragment = ""
	u.RawFragment = ""
	return u.String()
}

// StripURLError drops the *url.Error around err (an HTTP client's or url.Parse's): it quotes
// the whole URL, query included.
func StripURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
