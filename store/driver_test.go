package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/store"
)

type fakeDriver struct{}

func (fakeDriver) Open(context.Context, string, store.DriverOptions) (store.Store, error) {
	return nil, errors.New("fake")
}

func (fakeDriver) Migrate(context.Context, string, store.DriverOptions) (store.MigrationPlan, error) {
	return store.MigrationPlan{}, nil
}

// This test binary imports no driver package: postgres and sqlite are known but not linked,
// which is what a program that does not import them sees.
func TestLookupNamesTheImportOfADriverNotLinked(t *testing.T) {
	_, err := store.Lookup("postgres")
	if !errors.Is(err, store.ErrUnknownDriver) {
		t.Fatalf("Lookup(postgres) = %v, want ErrUnknownDriver", err)
	}
	if want := `import _ "github.com/scribehook/scribehook/store/postgres"`; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %s", err, want)
	}
	_, err = store.Lookup("mysql")
	if !errors.Is(err, store.ErrUnknownDriver) || !strings.Contains(err.Error(), `"mysql"`) {
		t.Errorf("Lookup(mysql) = %v, want ErrUnknownDriver naming mysql", err)
	}
}

func TestRegisterAndLookup(t *testing.T) {
	store.Register("fake-for-test", fakeDriver{})
	d, err := store.Lookup("fake-for-test")
	if err != nil || d == nil {
		t.Fatalf("Lookup = %v, %v", d, err)
	}
	if got := store.Drivers(); !strings.Contains(strings.Join(got, ","), "fake-for-test") {
		t.Errorf("Drivers() = %q", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second Register of one name did not panic")
		}
	}()
	store.Register("fake-for-test", fakeDriver{})
}
