package scribehook

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/store"
)

// An unknown store.driver is refused by OpenStore and MigrateStore with an error that names the
// key and wraps store.ErrUnknownDriver.
func TestOpenStoreUnknownDriver(t *testing.T) {
	cfg := configs.Default()
	cfg.Store.Driver = "mysql"
	_, err := OpenStore(context.Background(), cfg)
	if !errors.Is(err, store.ErrUnknownDriver) || !strings.HasPrefix(err.Error(), "store.driver: ") {
		t.Errorf("OpenStore = %v, want store.driver: … ErrUnknownDriver", err)
	}
	_, err = MigrateStore(context.Background(), cfg, false)
	if !errors.Is(err, store.ErrUnknownDriver) {
		t.Errorf("MigrateStore = %v, want ErrUnknownDriver", err)
	}
}
