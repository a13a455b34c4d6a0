package handlers

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
)

// A broker driver the program did not import is refused before anything is dialled, with the
// import that links it; an unknown one with the drivers there are.
func TestOpenBusDriverNotLinked(t *testing.T) {
	busMu.Lock()
	saved := busDrivers[BusNATS]
	delete(busDrivers, BusNATS) // as in a program that does not import handlers/natsbus
	busMu.Unlock()
	t.Cleanup(func() {
		busMu.Lock()
		if saved != nil {
			busDrivers[BusNATS] = saved
		}
		busMu.Unlock()
	})
	_, err := OpenBus(context.Background(), BusConfig{Driver: BusNATS, URL: "nats://127.0.0.1:1"})
	if !errors.Is(err, ErrUnknownBusDriver) || !strings.Contains(err.Error(), `import _ "github.com/scribehook/scribehook/handlers/natsbus"`) {
		t.Errorf("OpenBus(nats, not linked) = %v, want ErrUnknownBusDriver naming the import", err)
	}
	_, err = OpenBus(context.Background(), BusConfig{Driver: "kafka", URL: "x"})
	if !errors.Is(err, ErrUnknownBusDriver) || !strings.Contains(err.Error(), `"kafka"`) {
		t.Errorf("OpenBus(kafka) = %v, want ErrUnknownBusDriver", err)
	}
}

func TestRegisterBusRefusesDuplicatesAndGoChannel(t *testing.T) {
	open := func(context.Context, BusConfig, watermill.LoggerAdapter) (BusConn, error) { return nil, nil }
	RegisterBus("test-broker", open)
	t.Cleanup(func() { busMu.Lock(); delete(busDrivers, "test-broker"); busMu.Unlock() })
	if !strings.Contains(strings.Join(BusDrivers(), ","), "test-broker") {
		t.Errorf("BusDrivers() = %q", BusDrivers())
	}
	for _, name := range []string{"test-broker", "gochannel", ""} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterBus(%q) did not panic", name)
				}
			}()
			RegisterBus(name, open)
		}()
	}
}
