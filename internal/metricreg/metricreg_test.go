package metricreg_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scribehook/scribehook/internal/metricreg"
)

func counter(name string) prometheus.Counter {
	return metricreg.Counter(name, name+".")
}

func names(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		out = append(out, mf.GetName())
	}
	return out
}

func TestRegister(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := metricreg.Register(reg, counter("taken")); err != nil {
		t.Fatal(err)
	}
	// The third collector clashes: the first two are unregistered again.
	err := metricreg.Register(reg, counter("a"), counter("b"), counter("taken"), counter("c"))
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("Register over a taken name = %v, want prometheus.AlreadyRegisteredError", err)
	}
	if got := names(t, reg); len(got) != 1 || got[0] != "taken" {
		t.Fatalf("after a failed Register the registry holds %q, want only \"taken\"", got)
	}
	// All of them, once the clash is gone.
	if err := metricreg.Register(reg, counter("a"), counter("b"), counter("c")); err != nil {
		t.Fatalf("Register = %v", err)
	}
	if got := names(t, reg); len(got) != 4 || got[0] != "a" || got[1] != "b" || got[2] != "c" || got[3] != "taken" {
		t.Fatalf("the registry holds %q, want a, b, c, taken", got)
	}
}

// Each constructor declares the metric it names: its name, help, type, labels and, for a
// histogram, its buckets, as a scrape shows them.
func TestConstructors(t *testing.T) {
	c := metricreg.Counter("c_total", "A counter.")
	cv := metricreg.CounterVec("cv_total", "A counter by kind.", "kind", "outcome")
	g := metricreg.Gauge("g", "A gauge.")
	gv := metricreg.GaugeVec("gv", "A gauge by sink.", "sink")
	gf := metricreg.GaugeFunc("gf", "A gauge read at the scrape.", func() float64 { return 7 })
	h := metricreg.Histogram("h_seconds", "A histogram.", []float64{0.1, 1})
	reg := prometheus.NewRegistry()
	if err := metricreg.Register(reg, c, cv, g, gv, gf, h); err != nil {
		t.Fatal(err)
	}
	c.Add(2)
	cv.WithLabelValues("job", "ok").Add(3)
	g.Set(4)
	gv.WithLabelValues("files").Set(5)
	h.Observe(0.5)
	h.Observe(2)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		help, typ, labels string
		value             float64
	}
	wants := map[string]want{
		"c_total":   {"A counter.", "COUNTER", "", 2},
		"cv_total":  {"A counter by kind.", "COUNTER", "kind=job,outcome=ok", 3},
		"g":         {"A gauge.", "GAUGE", "", 4},
		"gv":        {"A gauge by sink.", "GAUGE", "sink=files", 5},
		"gf":        {"A gauge read at the scrape.", "GAUGE", "", 7},
		"h_seconds": {"A histogram.", "HISTOGRAM", "", 2},
	}
	if len(mfs) != len(wants) {
		t.Fatalf("%d metric families, want %d", len(mfs), len(wants))
	}
	for _, mf := range mfs {
		w, ok := wants[mf.GetName()]
		if !ok {
			t.Errorf("unexpected metric %s", mf.GetName())
			continue
		}
		m := mf.GetMetric()[0]
		var labels []string
		for _, l := range m.GetLabel() {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		var value float64
		switch mf.GetType().String() {
		case "COUNTER":
			value = m.GetCounter().GetValue()
		case "GAUGE":
			value = m.GetGauge().GetValue()
		case "HISTOGRAM":
			value = float64(m.GetHistogram().GetSampleCount())
			var bounds []float64
			for _, b := range m.GetHistogram().GetBucket() {
				bounds = append(bounds, b.GetUpperBound())
			}
			if len(bounds) != 2 || bounds[0] != 0.1 || bounds[1] != 1 {
				t.Errorf("%s buckets %v, want [0.1 1]", mf.GetName(), bounds)
			}
		}
		got := want{mf.GetHelp(), mf.GetType().String(), strings.Join(labels, ","), value}
		if got != w {
			t.Errorf("%s = %+v, want %+v", mf.GetName(), got, w)
		}
	}
}
