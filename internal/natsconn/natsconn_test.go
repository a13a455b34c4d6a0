package natsconn_test

import (
	"errors"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/nats-io/nats.go"

	"github.com/scribehook/scribehook/internal/natsconn"
)

func TestStreamName(t *testing.T) {
	for _, tc := range []struct{ subject, fallback, want string }{
		{"scribehook.inbox", "scribehook_inbox", "scribehook_inbox"},
		{"scribehook.events.", "scribehook", "scribehook_events"},
		{"a._b-c.D9", "x", "a__b-c_D9"}, // no collapsing: a bus stream keeps its name
		{"tenant/one events", "x", "tenant_one_events"},
		{"...", "scribehook_inbox", "scribehook_inbox"},
		{"", "scribehook", "scribehook"},
		{"__x__", "y", "x"},
	} {
		if got := natsconn.StreamName(tc.subject, tc.fallback); got != tc.want {
			t.Errorf("StreamName(%q, %q) = %q, want %q", tc.subject, tc.fallback, got, tc.want)
		}
	}
}

// Options name the connection, reconnect without end unless overridden, and log disconnects
// (not clean closes) and reconnects under the connection's name.
func TestOptions(t *testing.T) {
	log := watermill.NewCaptureLogger()
	o := nats.GetDefaultOptions()
	for _, opt := range natsconn.Options("sink files", log, nats.RetryOnFailedConnect(true)) {
		if err := opt(&o); err != nil {
			t.Fatal(err)
		}
	}
	if o.Name != "scribehook sink files" || o.MaxReconnect != -1 || !o.RetryOnFailedConnect {
		t.Fatalf("options: Name %q, MaxReconnect %d, RetryOnFailedConnect %t; want %q, -1, true",
			o.Name, o.MaxReconnect, o.RetryOnFailedConnect, "scribehook sink files")
	}
	down := errors.New("connection reset")
	o.DisconnectedErrCB(nil, nil)
	o.DisconnectedErrCB(nil, down)
	o.ReconnectedCB(nil)
	got := log.Captured()
	if errs := got[watermill.ErrorLogLevel]; len(errs) != 1 || errs[0].Msg != "nats disconnected" ||
		errs[0].Err != down || errs[0].Fields["connection"] != "sink files" {
		t.Errorf("disconnect logs %+v, want one error \"nats disconnected\" of sink files", errs)
	}
	if infos := got[watermill.InfoLogLevel]; len(infos) != 1 || infos[0].Msg != "nats reconnected" ||
		infos[0].Fields["connection"] != "sink files" {
		t.Errorf("reconnect logs %+v, want one \"nats reconnected\" of sink files", infos)
	}

	o = nats.GetDefaultOptions()
	for _, opt := range natsconn.Options("bus", log, nats.MaxReconnects(3)) {
		_ = opt(&o)
	}
	if o.MaxReconnect != 3 {
		t.Errorf("an option given overrides: MaxReconnect %d, want 3", o.MaxReconnect)
	}
}
