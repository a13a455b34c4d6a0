package api

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/scribehook/scribehook/internal/plainjson"
)

// TokenMarker stands where a callback URL carried a secret.
const TokenMarker = "[token]"

// RedactCallbackURL hides what makes a callback URL a capability: its last path segment (the
// token of scribehook's callback routes, and of most webhook receivers), every query value, any
// user information and the fragment. Scheme, host and the rest of the path stay, so a record
// still tells where its callbacks went. A string that does not parse as a URL is replaced
// whole. Redacting twice gives the same string.
func RedactCallbackURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" {
		return TokenMarker
	}
	var b strings.Builder
	if u.Scheme != "" {
		b.WriteString(u.Scheme)
		b.WriteString(":")
	}
	if u.Host != "" || u.User != nil {
		b.WriteString("//")
		if u.User != nil {
			// A user name can be the secret itself (token@host). The marker is escaped here, as
			// user information must be, so that the result parses again.
			b.WriteString(url.User(TokenMarker).String() + "@")
		}
		b.WriteString(u.Host)
	}
	p := u.EscapedPath()
	if trimmed := strings.TrimRight(p, "/"); trimmed != "" {
		p = trimmed[:strings.LastIndexByte(trimmed, '/')+1] + TokenMarker
	}
	if u.Scheme != "" && u.Host == "" && u.User == nil && strings.HasPrefix(p, "//") {
		// An empty authority before it, as the URL had: after a scheme, a path that starts
		// with // would read back as an authority, and the redaction would not be stable.
		// (Without a scheme, url.Parse reads "///…" as a path, and it is written as read.)
		b.WriteString("//")
	}
	b.WriteString(p)
	if u.RawQuery != "" || u.ForceQuery {
		b.WriteString("?")
		for i, pair := range strings.Split(u.RawQuery, "&") {
			if i > 0 {
				b.WriteString("&")
			}
			key, _, _ := strings.Cut(pair, "=")
			b.WriteString(key)
			b.WriteString("=" + TokenMarker)
		}
	}
	if u.Fragment != "" || u.RawFragment != "" {
		b.WriteString("#" + TokenMarker)
	}
	return b.String()
}

// RedactRequestParams returns request_params (of either kind) with its callback URLs
// (callback_url, callback_config.url, under any spelling encoding/json would decode into those
// fields) passed through RedactCallbackURL. Everything else stays byte for byte; params without
// a callback URL are returned as they are. It is applied to every job record decoded (Job's
// UnmarshalJSON: the service's records and the store's) and to the request params scribehook
// records for a job it submits, so a per-job token never reaches the store, an event, a sink,
// the read API or a log.
func RedactRequestParams(raw json.RawMessage) json.RawMessage {
	if isNull(raw) || !bytes.Contains(bytes.ToLower(raw), []byte("callback")) && !hasEscapes(raw) {
		return raw
	}
	out, ok := redactMembers(raw, map[string]func([]byte) ([]byte, bool){
		"callback_url": redactStringValue,
		"callback_config": func(v []byte) ([]byte, bool) {
			return redactMembers(v, map[string]func([]byte) ([]byte, bool){"url": redactStringValue})
		},
	})
	if !ok {
		return redactDecoded(raw)
	}
	return out
}

// hasEscapes reports whether raw has a backslash: a key can then spell "callback" with escapes.
func hasEscapes(raw []byte) bool { return bytes.IndexByte(raw, '\\') >= 0 }

// redactMembers rewrites the values of obj's members whose names fold to a key of rewrite,
// splicing the new values in place. ok is false when obj cannot be scanned (then nothing is
// rewritten and the caller decodes instead); a value that is not an object where one is
// expected is left alone.
func redactMembers(obj []byte, rewrite map[string]func([]byte) ([]byte, bool)) ([]byte, bool) {
	if i := skipSpace(obj, 0); i >= len(obj) || obj[i] != '{' {
		// Not an object (null, a string where params belong): it holds no callback URL.
		return obj, true
	}
	it := objectMembers(obj)
	var out []byte
	last := 0
	for key, value := range it.all {
		name, ok := keyName(key)
		if !ok {
			return nil, false
		}
		for want, fn := range rewrite {
			if !strings.EqualFold(name, want) {
				continue
			}
			nv, ok := fn(value)
			if !ok {
				return nil, false
			}
			if bytes.Equal(nv, value) {
				continue
			}
			start := cap(obj) - cap(value)
			out = append(out, obj[last:start]...)
			out = append(out, nv...)
			last = start + len(value)
		}
	}
	if it.bad {
		return nil, false
	}
	if out == nil {
		return obj, true
	}
	return append(out, obj[last:]...), true
}

// redactStringValue redacts a JSON string holding a URL; other values pass.
func redactStringValue(v []byte) ([]byte, bool) {
	if len(v) == 0 || v[0] != '"' {
		return v, true
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, false
	}
	r := RedactCallbackURL(s)
	if r == s {
		return v, true
	}
	b, err := plainjson.Marshal(r)
	return b, err == nil // a string always encodes
}

// redactDecoded is the slow path for params the scanner does not take: decode, redact, encode
// (members then come out in sorted order). Bytes that are not JSON at all are dropped whole:
// they cannot be shown to hold no token.
func redactDecoded(raw json.RawMessage) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return json.RawMessage(`null`)
	}
	if m, ok := v.(map[string]any); ok {
		for k, val := range m {
			switch {
			case strings.EqualFold(k, "callback_url"):
				if s, ok := val.(string); ok {
					m[k] = RedactCallbackURL(s)
				}
			case strings.EqualFold(k, "callback_config"):
				if cc, ok := val.(map[string]any); ok {
					for ck, cv := range cc {
						if s, ok := cv.(string); ok && strings.EqualFold(ck, "url") {
							cc[ck] = RedactCallbackURL(s)
						}
					}
				}
			}
		}
	}
	b, err := plainjson.Marshal(v)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}
