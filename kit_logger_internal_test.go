package scribehook

import (
	"context"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/configs"
)

// New logs through WithLogger's logger, or logrus's standard logger without it (logx.OrStandard).
func TestNewLogger(t *testing.T) {
	given := logrus.New()
	for _, tc := range []struct {
		name string
		opts []Option
		want *logrus.Logger
	}{
		{"without WithLogger", nil, logrus.StandardLogger()},
		{"WithLogger", []Option{WithLogger(given)}, given},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := kitConfig(t.TempDir(), listen(t), "http://127.0.0.1:1")
			opts := append([]Option{WithSecrets(configs.Secrets{APIKey: testKey})}, tc.opts...)
			k, err := New(context.Background(), cfg, opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = k.Close() })
			if k.log.Logger != tc.want {
				t.Fatalf("the kit logs through %p, want %p", k.log.Logger, tc.want)
			}
		})
	}
}
