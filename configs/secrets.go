package configs

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// Secrets are the values the configuration names by variable. They are never part of Config,
// and their String, GoString and MarshalJSON say only which are set.
type Secrets struct {
	// APIKey is the service API key; empty when its variable is unset (serve then cannot
	// resolve thin webhooks, and submit and live refuse to run).
	APIKey string
	// ReadToken is the bearer token of the local read API; empty when unset.
	ReadToken string
	// Routes holds each static route's secrets, by route name.
	Routes map[string]RouteSecrets
	// Sinks holds the signing secret of each sink that names one, by sink name.
	Sinks map[string]string
	// BlobKeys holds the S3 keys of each blob sink that names them, by sink name.
	BlobKeys map[string]BlobKeys
	// TracingHeaders are the headers sent with every export of spans (tracing.headers_env,
	// ParseTracingHeaders), by lower-case name; nil when tracing is off or names none.
	TracingHeaders map[string]string
}

// BlobKeys are a blob sink's S3 keys (access_key_env, secret_key_env, session_token_env).
type BlobKeys struct {
	AccessKeyID, SecretAccessKey, SessionToken string
}

// RouteSecrets are the token of a static route and the secrets its deliveries may be signed
// with (several during a rotation; none when the route checks no signature).
type RouteSecrets struct {
	Token          string
	SigningSecrets []string
}

// Secrets resolves every secret the configuration names from environ (KEY=VALUE entries). A
// variable NAME may instead be given as NAME_FILE, the path of a file holding the value;
// giving both is an error. A route whose token variable is unset, or a sink whose secret_env
// is unset, is an error that names the variable.
func (c Config) Secrets(environ []string) (Secrets, error) {
	env := envMap(environ)
	var errs []error
	get := func(name string) string {
		v, err := lookupSecret(env, name)
		if err != nil {
			errs = append(errs, err)
		}
		return v
	}
	s := Secrets{Routes: map[string]RouteSecrets{}, Sinks: map[string]string{}, BlobKeys: map[string]BlobKeys{}}
	if c.Service.APIKeyEnv != "" {
		s.APIKey = get(c.Service.APIKeyEnv)
	}
	if c.ReadTokenEnv != "" {
		s.ReadToken = get(c.ReadTokenEnv)
	}
	for _, r := range c.Routes {
		var rs RouteSecrets
		rs.Token = get(r.TokenEnv)
		if rs.Token == "" && r.TokenEnv != "" {
			errs = append(errs, fmt.Errorf("route %s: environment variable %s is empty: set it to the route's callback token", r.Name, r.TokenEnv))
		}
		if r.SigningSecretEnv != "" {
			rs.SigningSecrets = strings.FieldsFunc(get(r.SigningSecretEnv), func(r rune) bool {
				return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
			})
			if len(rs.SigningSecrets) == 0 {
				errs = append(errs, fmt.Errorf("route %s: environment variable %s is empty: set it to the signing secret, or remove signing_secret_env", r.Name, r.SigningSecretEnv))
			}
		}
		s.Routes[r.Name] = rs
	}
	for _, k := range c.Sinks {
		if k.SecretEnv == "" {
			continue
		}
		if s.Sinks[k.Name] = get(k.SecretEnv); s.Sinks[k.Name] == "" {
			errs = append(errs, fmt.Errorf("sink %s: environment variable %s is empty: set it to the signing secret, or remove secret_env", k.Name, k.SecretEnv))
		}
	}
	for _, k := range c.Sinks {
		if k.AccessKeyEnv == "" && k.SecretKeyEnv == "" && k.SessionTokenEnv == "" {
			continue
		}
		var keys BlobKeys
		for _, f := range []struct {
			key, env string
			to       *string
		}{{"access_key_env", k.AccessKeyEnv, &keys.AccessKeyID}, {"secret_key_env", k.SecretKeyEnv, &keys.SecretAccessKey}, {"session_token_env", k.SessionTokenEnv, &keys.SessionToken}} {
			if f.env == "" {
				continue
			}
			if *f.to = get(f.env); *f.to == "" {
				errs = append(errs, fmt.Errorf("sink %s: environment variable %s is empty: set it, or remove %s", k.Name, f.env, f.key))
			}
		}
		s.BlobKeys[k.Name] = keys
	}
	if t := c.Tracing; t.Enabled && t.HeadersEnv != "" {
		if v := get(t.HeadersEnv); v == "" {
			errs = append(errs, fmt.Errorf("tracing: environment variable %s is empty: set it to the export headers (key=value,…), or remove headers_env", t.HeadersEnv))
		} else if h, err := ParseTracingHeaders(t.HeadersEnv, v); err != nil {
			errs = append(errs, fmt.Errorf("tracing: %w", err))
		} else {
			s.TracingHeaders = h
		}
	}
	if len(errs) > 0 {
		return Secrets{}, errors.Join(dedupe(errs)...)
	}
	return s, nil
}

// LookupSecret reads one secret from environ: the variable name, or the file named by
// name_FILE; "" when neither is set. Commands that need one secret (the API key of submit and
// live) use it instead of Secrets, which insists on every secret serve needs.
func LookupSecret(environ []string, name string) (string, error) {
	return lookupSecret(envMap(environ), name)
}

func envMap(environ []string) map[string]string {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v // a later entry wins, as with os/exec
		}
	}
	return env
}

// lookupSecret reads NAME, or the file named by NAME_FILE.
func lookupSecret(env map[string]string, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	v := env[name]
	file := env[name+"_FILE"]
	switch {
	case v != "" && file != "":
		return "", fmt.Errorf("both %s and %s_FILE are set: keep one", name, name)
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			// The path is not secret; the error of ReadFile holds nothing else.
			return "", fmt.Errorf("read %s_FILE: %w", name, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return v, nil
}

func dedupe(errs []error) []error {
	seen := map[string]bool{}
	out := errs[:0]
	for _, e := range errs {
		if !seen[e.Error()] {
			seen[e.Error()] = true
			out = append(out, e)
		}
	}
	return out
}

func setOrUnset(v string) string {
	if v == "" {
		return "unset"
	}
	return "set"
}

// String says which secrets are set, never their values.
func (s Secrets) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "api_key=%s read_token=%s", setOrUnset(s.APIKey), setOrUnset(s.ReadToken))
	for _, n := range slices.Sorted(maps.Keys(s.Routes)) {
		fmt.Fprintf(&b, " route.%s=%s", n, s.Routes[n])
	}
	for _, n := range slices.Sorted(maps.Keys(s.Sinks)) {
		fmt.Fprintf(&b, " sink.%s=%s", n, setOrUnset(s.Sinks[n]))
	}
	for _, n := range slices.Sorted(maps.Keys(s.BlobKeys)) {
		fmt.Fprintf(&b, " blob.%s=%s", n, s.BlobKeys[n])
	}
	if len(s.TracingHeaders) > 0 {
		fmt.Fprintf(&b, " tracing_headers=%d", len(s.TracingHeaders))
	}
	return b.String()
}

// GoString keeps %#v from printing the fields.
func (s Secrets) GoString() string { return "configs.Secrets{" + s.String() + "}" }

// MarshalJSON keeps an encoder from printing the fields.
func (s Secrets) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf("%q", s.String())), nil }

// String says whether the token is set and how many signing secrets there are.
func (r RouteSecrets) String() string {
	return fmt.Sprintf("token:%s,signing_secrets:%d", setOrUnset(r.Token), len(r.SigningSecrets))
}

// String says which of the keys are set.
func (k BlobKeys) String() string {
	return fmt.Sprintf("access_key:%s,secret_key:%s,session_token:%s", setOrUnset(k.AccessKeyID), setOrUnset(k.SecretAccessKey), setOrUnset(k.SessionToken))
}

// GoString keeps %#v from printing the fields.
func (k BlobKeys) GoString() string { return "configs.BlobKeys{" + k.String() + "}" }

// MarshalJSON keeps an encoder from printing the fields.
func (k BlobKeys) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf("%q", k.String())), nil }

// GoString keeps %#v from printing the fields.
func (r RouteSecrets) GoString() string { return "configs.RouteSecrets{" + r.String() + "}" }

// MarshalJSON keeps an encoder from printing the fields.
func (r RouteSecrets) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf("%q", r.String())), nil
}
