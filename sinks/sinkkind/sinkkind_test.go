package sinkkind_test

import (
	"slices"
	"testing"

	"github.com/scribehook/scribehook/sinks/sinkkind"
)

// This test binary links no kind of the module: only what it registers itself.
func TestRegistry(t *testing.T) {
	if _, ok := sinkkind.Lookup("file"); ok {
		t.Fatal("file is registered without importing sinks")
	}
	if pkg, ok := sinkkind.Import("redisstream"); !ok || pkg != "github.com/scribehook/scribehook/sinks/redissink" {
		t.Errorf("Import(redisstream) = %q, %v", pkg, ok)
	}
	if _, ok := sinkkind.Import("kafka"); ok {
		t.Error("Import(kafka) names a package")
	}
	sinkkind.Register(sinkkind.Kind{Name: "zz-queue"})
	sinkkind.Register(sinkkind.Kind{Name: "aa-queue"})
	if got := sinkkind.Names(); !slices.Equal(got, []string{"aa-queue", "zz-queue"}) {
		t.Errorf("Names() = %q, want the kinds of other modules sorted", got)
	}
	if k, ok := sinkkind.Lookup("aa-queue"); !ok || k.Name != "aa-queue" {
		t.Errorf("Lookup(aa-queue) = %+v, %v", k, ok)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second Register of one name did not panic")
		}
	}()
	sinkkind.Register(sinkkind.Kind{Name: "aa-queue"})
}
