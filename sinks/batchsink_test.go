package sinks_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/sinks"
)

// countingBatchSink is the file sink counting the batches the dispatcher hands it.
type countingBatchSink struct {
	*sinks.FileSink
	mu      sync.Mutex
	batches []int
}

func (s *countingBatchSink) DeliverBatch(ctx context.Context, evs []api.Event) []error {
	s.mu.Lock()
	s.batches = append(s.batches, len(evs))
	s.mu.Unlock()
	return s.FileSink.DeliverBatch(ctx, evs)
}

// TestDispatchFileSinkInBatches: the dispatcher hands a BatchSink the deliveries of a claim
// together, and every event is written once.
func TestDispatchFileSinkInBatches(t *testing.T) {
	const n = 200
	e := newDispEnv(t)
	dir := filepath.Join(t.TempDir(), "out")
	fs, err := sinks.NewFile(sinks.Spec{Name: "files", Kind: sinks.KindFile, Dir: dir}, sinks.Deps{Logger: dispQuiet()})
	if err != nil {
		t.Fatal(err)
	}
	sink := &countingBatchSink{FileSink: fs}
	e.enqueue("files", dispIDs(n, 20)...)
	e.run(sinks.DispatcherConfig{Queue: newBatchSpy(e.store, false)}, []sinks.Spec{{Name: "files"}}, sink)
	testwait.For(t, "every delivery recorded", dispWait, func() bool { return e.depth("files") == 0 })
	files, err := filepath.Glob(filepath.Join(dir, "*", "events", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != n {
		t.Errorf("%d event files, want %d", len(files), n)
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v, size %d", f, err, fi.Size())
		}
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	batched := 0
	for _, b := range sink.batches {
		batched += b
	}
	if len(sink.batches) == 0 || batched < n/2 {
		t.Errorf("batches %v: %d of %d events delivered in batches, want most", sink.batches, batched, n)
	}
}
