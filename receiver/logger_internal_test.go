package receiver

import (
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/store"
)

// A receiver without a Logger logs through logrus's standard logger (logx.OrStandard), as its
// component.
func TestNilLoggerIsStandard(t *testing.T) {
	st := teststore.SQLite(t)
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
