package sqlcore

import (
	"testing"
	"time"
)

func TestCeilMicro(t *testing.T) {
	base := time.Date(2024, 3, 1, 0, 0, 0, 1000, time.UTC)
	if got := ceilMicro(base); !got.Equal(base) {
		t.Errorf("ceilMicro(%v) = %v", base, got)
	}
	if got := ceilMicro(base.Add(1)); !got.Equal(base.Add(time.Microsecond)) {
		t.Errorf("ceilMicro(+1ns) = %v", got)
	}
}
