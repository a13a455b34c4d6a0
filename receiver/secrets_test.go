package receiver

import (
	"context"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/store"
)

// panicIngester fails the way a bug would: the recover middleware logs the request.
type panicIngester struct{}

func (panicIngester) Submit(context.Context, store.Delivery) (store.IngestResult, error) {
	panic("ingester bug")
}

// A handler that panics is logged with its path; a callback's path holds its token, which the
// harness's cleanup looks for in the logs (whatever the case of the path, which Fiber routes
// case-insensitively).
func TestPanicLogDoesNotCarryTheCallbackToken(t *testing.T) {
	h := newHarness(t, withConfig(func(c *Config) { c.Ingester = panicIngester{} }))
	body := []byte(`{"id":"j1","event":"transcription.error","error":{"code":500,"message":"x"}}`)
	if r := h.post(testRouteToken, body, nil); r.status != 500 {
		t.Fatalf("status = %d %s", r.status, r.body)
	}
	if r := h.do("POST", "/V1/Callbacks/"+testRouteToken, body, map[string]string{"Content-Type": "application/json"}); r.status != 500 {
		t.Fatalf("upper-case path: status = %d %s", r.status, r.body)
	}
	logs := h.logs.String()
	if strings.Count(logs, "handler panicked") != 2 || !strings.Contains(logs, "ingester bug") {
		t.Fatalf("panics not logged: %s", logs)
	}
}
