package receiver

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// newMetrics registers its collectors all or none: a clash on the last one leaves the
// registry as it was, so the receiver can be built again on it once the clash is gone.
func TestNewMetricsRegistersAllOrNone(t *testing.T) {
	reg := prometheus.NewRegistry()
	// The same name and help (a registry keeps a name's help even after Unregister).
	clash := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "scribehook_inbox_backlog",
		Help: "Inbox rows not processed yet (refreshed at most once a second).",
	})
	reg.MustRegister(clash)
	if _, err := newMetrics(reg, func() float64 { return 0 }, func() float64 { return 0 }); err == nil {
		t.Fatal("newMetrics over a taken scribehook_inbox_backlog succeeded")
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != "scribehook_inbox_backlog" {
		var got []string
		for _, mf := range mfs {
			got = append(got, mf.GetName())
		}
		t.Fatalf("after the failed registration the registry holds %q, want only scribehook_inbox_backlog", got)
	}
	reg.Unregister(clash)
	if _, err := newMetrics(reg, func() float64 { return 0 }, func() float64 { return 0 }); err != nil {
		t.Fatalf("newMetrics once the clash is gone: %v", err)
	}
}
