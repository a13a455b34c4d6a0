package sandboxtest

import (
	"strings"
	"sync"
	"testing"
)

// Writers and a reader at once (run under -race): every write lands whole, and Bytes is a copy.
func TestBufferConcurrent(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("line\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := strings.Count(b.String(), "line\n"); got != 800 {
		t.Errorf("%d whole lines, want 800", got)
	}
	got := b.Bytes()
	got[0] = 'X'
	if !strings.HasPrefix(b.String(), "line") {
		t.Error("changing what Bytes returned changed the buffer")
	}
}
