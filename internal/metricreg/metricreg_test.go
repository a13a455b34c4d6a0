package metricreg_test

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scribehook/scribehook/internal/metricreg"
)

func counter(name string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: name + "."})
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
