package engine

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestRegistry(t *testing.T) {
	r := newScriptedRegistry()
	if got := r.Names(); !reflect.DeepEqual(got, []string{"scripted"}) {
		t.Fatalf("names %v", got)
	}
	e, err := r.New("scripted")
	if err != nil || e.Name() != "scripted" {
		t.Fatalf("%v %v", e, err)
	}
	if err := r.Register("scripted", func() (Engine, error) { return nil, nil }); err == nil {
		t.Fatal("duplicate name accepted")
	}
	for _, bad := range []string{"", " x", "y "} {
		if err := r.Register(bad, func() (Engine, error) { return nil, nil }); err == nil {
			t.Fatalf("name %q accepted", bad)
		}
	}
	if err := r.Register("nil", nil); err == nil {
		t.Fatal("nil factory accepted")
	}
	boom := errors.New("no model directory")
	if err := r.Register("pocketsphinx", func() (Engine, error) { return nil, boom }); err != nil {
		t.Fatal(err)
	}
	if got := r.Names(); !reflect.DeepEqual(got, []string{"pocketsphinx", "scripted"}) {
		t.Fatalf("names %v", got)
	}
	if _, err := r.New("pocketsphinx"); !errors.Is(err, boom) {
		t.Fatalf("factory error not wrapped: %v", err)
	}
	_, err = r.New("whisper")
	if err == nil || err.Error() != `engine: unknown engine "whisper"; available: pocketsphinx, scripted` {
		t.Fatalf("error %v", err)
	}
	// Registries are independent values.
	if got := newScriptedRegistry().Names(); len(got) != 1 {
		t.Fatalf("a new registry sees another's engines: %v", got)
	}
}

func TestStreamConfigDefaults(t *testing.T) {
	c, err := StreamConfig{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Channels != 1 || c.Endpointing != 0.05 || c.MaxUtterance != 5 || c.SpeechThreshold != 0 {
		t.Fatalf("%+v", c)
	}
	for _, bad := range []StreamConfig{{Channels: 9}, {Channels: -1}, {Endpointing: -1}, {MaxUtterance: -5}, {SpeechThreshold: 1.5}, {SpeechThreshold: -0.1}} {
		if _, err := (&Scripted{}).NewStream(bad); err == nil || !strings.HasPrefix(err.Error(), "engine: ") {
			t.Errorf("%+v: error %v", bad, err)
		}
	}
}

func TestUnsupportedError(t *testing.T) {
	err := error(&UnsupportedError{Engine: "scripted", Reason: "no audio channels"})
	var u *UnsupportedError
	if !errors.As(err, &u) || err.Error() != "scripted: no audio channels" {
		t.Fatal(err)
	}
}

// checkStreamMisuse holds a two-channel stream of any engine to the Stream contract on misuse:
// audio of the wrong shape is an UnsupportedError, audio after Finish an error, and a second
// Finish and a Close after it do nothing.
func checkStreamMisuse(t *testing.T, st Stream) {
	t.Helper()
	var u *UnsupportedError
	if _, err := st.Feed([][]float32{{1}}); !errors.As(err, &u) {
		t.Fatalf("one channel fed to two: %v", err)
	}
	if _, err := st.Feed([][]float32{{1, 2}, {1}}); !errors.As(err, &u) {
		t.Fatalf("channels of different lengths: %v", err)
	}
	if _, err := st.Finish(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Feed([][]float32{{1}, {1}}); err == nil {
		t.Fatal("feed after finish accepted")
	}
	if evs, err := st.Finish(); err != nil || evs != nil || st.Close() != nil {
		t.Fatal("a second finish and a close after it must be harmless")
	}
}

// checkTranscribeMisuse holds any engine to the Engine contract on audio of the wrong shape or
// rate: an UnsupportedError.
func checkTranscribeMisuse(t *testing.T, e Engine) {
	t.Helper()
	for _, req := range []Request{
		{},
		{Channels: [][]float32{{1, 2}, {1}}},
		{Channels: make([][]float32, 9)},
		{Channels: [][]float32{{1}}, SampleRate: 8000},
	} {
		var u *UnsupportedError
		if _, err := e.Transcribe(context.Background(), req); !errors.As(err, &u) {
			t.Errorf("%d channels at %d Hz: error %v", len(req.Channels), req.SampleRate, err)
		}
	}
}
