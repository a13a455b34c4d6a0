package blobsink_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/configs"
)

// The configuration of a blob sink's S3 keys by variable (package configs, with the kind
// linked): refused on other kinds, only as a pair, resolved into
// Secrets.BlobKeys, never printed.
func TestBlobKeys(t *testing.T) {
	blob := configs.Sink{Name: "archive", Kind: "blob", URL: "s3://b?region=eu-west-1", Events: []string{"*"}, Timeout: 1e9}
	cases := []struct {
		name string
		sink func() configs.Sink
		want []string
	}{
		{"keys on a file sink", func() configs.Sink {
			s := configs.ServeDefaults().Sinks[0]
			s.AccessKeyEnv, s.Prefix, s.Raw = "K", "x", true
			return s
		}, []string{
			"sinks[0].prefix is for blob sinks only (kind file)",
			"sinks[0].raw is for blob sinks only (kind file)",
			"sinks[0].access_key_env is for blob sinks only (kind file)",
		}},
		{"an access key alone", func() configs.Sink { s := blob; s.AccessKeyEnv = "S3_KEY"; return s },
			[]string{"sinks[0].secret_key_env is required with access_key_env: the variable of the secret access key"}},
		{"a secret alone and a token", func() configs.Sink { s := blob; s.SecretKeyEnv, s.SessionTokenEnv = "S3_SECRET", "S3_TOKEN"; return s },
			[]string{
				"sinks[0].access_key_env is required with secret_key_env: the variable of the access key id",
				"sinks[0].session_token_env is used only with access_key_env and secret_key_env",
			}},
		{"a bad name", func() configs.Sink { s := blob; s.AccessKeyEnv, s.SecretKeyEnv = "S3 KEY", "S3_SECRET"; return s },
			[]string{`sinks[0].access_key_env must be the name of an environment variable, letters, digits and _ (got "S3 KEY")`}},
		{"keys with an anonymous bucket", func() configs.Sink {
			s := blob
			s.URL, s.AccessKeyEnv, s.SecretKeyEnv = "s3://b?anonymous=true", "S3_KEY", "S3_SECRET"
			return s
		}, []string{"sinks[0].access_key_env cannot be used with an anonymous bucket URL (anonymous=true)"}},
		{"an unknown query parameter", func() configs.Sink { s := blob; s.URL = "s3://b?region=x&acl=public"; return s },
			[]string{`sinks[0].url query parameter "acl" is not one this sink reads (region, endpoint, use_path_style, disable_https, profile, anonymous, request_checksum_calculation, response_checksum_validation)`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := configs.ServeDefaults()
			cfg.Sinks = []configs.Sink{tc.sink()}
			var ve *configs.ValidationError
			if err := cfg.Validate(); !errors.As(err, &ve) {
				t.Fatalf("err = %v", err)
			}
			if got := ve.Sentences(); !slices.Equal(got, tc.want) {
				t.Fatalf("sentences:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}

	cfg := configs.ServeDefaults()
	s := blob
	s.AccessKeyEnv, s.SecretKeyEnv, s.SessionTokenEnv = "S3_KEY", "S3_SECRET", "S3_TOKEN"
	cfg.Sinks = []configs.Sink{s}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("valid keys refused: %v", err)
	}
	sec, err := cfg.Secrets([]string{"S3_KEY=AKIAEXAMPLE7", "S3_SECRET=wJalrXUtnFEMIK7", "S3_TOKEN=FwoGZXIvYXdz"})
	if err != nil {
		t.Fatal(err)
	}
	if k := sec.BlobKeys["archive"]; k.AccessKeyID != "AKIAEXAMPLE7" || k.SecretAccessKey != "wJalrXUtnFEMIK7" || k.SessionToken != "FwoGZXIvYXdz" {
		t.Errorf("BlobKeys = %#v", k)
	}
	for _, out := range []string{fmt.Sprintf("%v %+v %#v", sec, sec, sec), fmt.Sprint(sec.BlobKeys)} {
		for _, v := range []string{"AKIAEXAMPLE7", "wJalrXUtnFEMIK7", "FwoGZXIvYXdz"} {
			if strings.Contains(out, v) {
				t.Errorf("printed secrets show %s: %s", v, out)
			}
		}
	}
	if got := sec.String(); !strings.Contains(got, "blob.archive=access_key:set,secret_key:set,session_token:set") {
		t.Errorf("String = %s", got)
	}
	_, err = cfg.Secrets([]string{"S3_KEY=AKIAEXAMPLE7"})
	if err == nil || !strings.Contains(err.Error(), "sink archive: environment variable S3_SECRET is empty: set it, or remove secret_key_env") {
		t.Errorf("a missing secret: %v", err)
	}
}
