package receiver

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// A receiver without a Logger logs through logrus's standard logger (logx.OrStandard), as its
// component.
func TestNilLoggerIsStandard(t *testing.T) {
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "scribehook.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	batcher := store.NewBatcher(st, store.BatcherOptions{})
	t.Cleanup(func() { _ = batcher.Close() })
	r, err := New(Config{Store: st, Ingester: batcher})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.log.Logger; got != logrus.StandardLogger() {
		t.Fatalf("the receiver logs through %p, want logrus's standard logger %p", got, logrus.StandardLogger())
	}
	if got := r.log.Data["component"]; got != "receiver" {
		t.Fatalf("component field = %v, want receiver", got)
	}
}
