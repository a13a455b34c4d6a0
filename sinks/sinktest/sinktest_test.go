package sinktest_test

import (
	"testing"

	"github.com/scribehook/scribehook/sinks/sinktest"
)

// TestShelf runs the suite on the sink of the example, which keeps its events in memory: the
// suite's own test, every subtest but Batch run.
func TestShelf(t *testing.T) {
	sinktest.Run(t, sinktest.Features{ExactBytes: true}, openShelf)
}
