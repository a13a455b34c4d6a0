package wmlog

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

func TestLevels(t *testing.T) {
	l, hook := test.NewNullLogger()
	l.SetLevel(logrus.TraceLevel)
	a := New(l.WithField("component", "watermill")).With(watermill.LogFields{"topic": "t"})
	a.Error("publish failed", errors.New("down"), watermill.LogFields{"n": 1})
	a.Info("subscribing", nil)
	a.Debug("ack", nil)
	a.Trace("noise", nil)
	var got []string
	for _, e := range hook.AllEntries() {
		got = append(got, e.Level.String()+" "+e.Message+" "+e.Data["component"].(string)+" "+e.Data["topic"].(string))
	}
	want := "error publish failed watermill t|debug subscribing watermill t|debug ack watermill t"
	if strings.Join(got, "|") != want {
		t.Fatalf("logged %q, want %q", strings.Join(got, "|"), want)
	}
	if hook.AllEntries()[0].Data["error"].(error).Error() != "down" || hook.AllEntries()[0].Data["n"] != 1 {
		t.Errorf("fields %v", hook.AllEntries()[0].Data)
	}
}

// A limited adapter warns once per distinct message and period; the repeats go to debug.
func TestLimited(t *testing.T) {
	l, hook := test.NewNullLogger()
	l.SetLevel(logrus.DebugLevel)
	a := NewLimited(l, time.Hour)
	b := a.With(watermill.LogFields{"x": 1}) // shares the limiter
	for range 3 {
		a.Error("dial redis", errors.New("refused"), nil)
	}
	b.Error("dial redis", errors.New("refused"), nil)
	a.Error("other", errors.New("e"), nil)
	var levels []string
	for _, e := range hook.AllEntries() {
		levels = append(levels, e.Level.String())
	}
	if got := strings.Join(levels, ","); got != "warning,debug,debug,debug,warning" {
		t.Fatalf("levels %s", got)
	}
}
