//go:build !pocketsphinx

package engine

import (
	"reflect"
	"strings"
	"testing"
)

// Without the pocketsphinx tag the build has the scripted engine only, and says how to get
// the real one.
func TestPocketsphinxNotBuilt(t *testing.T) {
	r := NewRegistry()
	if got := r.Names(); !reflect.DeepEqual(got, []string{ScriptedName}) {
		t.Fatalf("names %v", got)
	}
	if _, err := r.New(PocketsphinxName); err == nil || !strings.Contains(err.Error(), "available: scripted") {
		t.Fatalf("error %v", err)
	}
	e, err := NewPocketsphinx(PocketsphinxOptions{})
	if e != nil || err == nil || !strings.Contains(err.Error(), "-tags pocketsphinx") {
		t.Fatalf("%v %v", e, err)
	}
}
