package benchcpu_test

import (
	"crypto/sha256"
	"testing"

	"github.com/scribehook/scribehook/internal/benchcpu"
)

// The metric is reported under its name, and work done between Start and Report is counted:
// hashing 64 KiB a thousand times per op cannot take no CPU time. (Its size is not checked:
// that would be a timing, which these shared machines do not keep.)
func TestReport(t *testing.T) {
	buf := make([]byte, 64<<10)
	res := testing.Benchmark(func(b *testing.B) {
		m := benchcpu.Start(b)
		for range b.N {
			for range 1000 {
				sum := sha256.Sum256(buf)
				buf[0] = sum[0]
			}
		}
		m.Report()
	})
	got, ok := res.Extra["cpu-µs/op"]
	if !ok {
		t.Fatalf("metrics %v, want cpu-µs/op among them", res.Extra)
	}
	if got <= 0 {
		t.Errorf("cpu-µs/op = %v over %d ops of hashing, want more than 0", got, res.N)
	}
}
