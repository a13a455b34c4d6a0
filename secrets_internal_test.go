package scribehook

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/configs"
)

// Secrets a program gives with WithSecrets were never read from the environment: the kit's
// warnings and errors about them say what they are in configs.Secrets, and name no variable
// the program never set.
func TestWithSecretsMessagesNameNoVariable(t *testing.T) {
	dir := t.TempDir()
	ln := listen(t)
	_ = ln.Close()
	cfg := kitConfig(dir, ln, "http://127.0.0.1:1")
	cfg.Routes = []configs.Route{{Name: "partner", TokenEnv: "PARTNER_TOKEN_ENV", SigningSecretEnv: "PARTNER_SIGNING_ENV"}}
	var logs bytes.Buffer
	logger := logrus.New()
	logger.SetOutput(&logs)
	k, err := New(context.Background(), cfg, WithLogger(logger), WithSecrets(configs.Secrets{
		// No API key, no read token, and a weak route token.
		Routes: map[string]configs.RouteSecrets{"partner": {Token: "short"}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Close() })
	_, subErr := k.Submitter()
	if subErr == nil {
		t.Fatal("Submitter without an API key: no error")
	}
	said := logs.String() + "\n" + subErr.Error()
	for _, env := range []string{cfg.Service.APIKeyEnv, cfg.ReadTokenEnv, "PARTNER_TOKEN_ENV", "PARTNER_SIGNING_ENV"} {
		if strings.Contains(said, env) {
			t.Errorf("a message names %s, which the program never set:\n%s", env, said)
		}
	}
	for _, want := range []string{
		"the service API key (WithSecrets APIKey) is not set",
		"the read token (WithSecrets ReadToken) is not set",
		"route partner's token (WithSecrets Routes[\\\"partner\\\"].Token) is too weak",
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs.String())
		}
	}
	if !strings.Contains(subErr.Error(), "WithSecrets APIKey") {
		t.Errorf("Submitter's error: %v", subErr)
	}
}
