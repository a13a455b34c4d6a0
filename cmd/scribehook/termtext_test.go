package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// Text from outside (a job id the service chose, a webhook target's error answer, a reason)
// reaches the terminal without its escape sequences, and a line break in it forges no row.
func TestTablesEscapeTerminalControls(t *testing.T) {
	at := time.Date(2026, 11, 20, 10, 4, 5, 0, time.UTC)
	var b bytes.Buffer
	if err := writeJobsTable(&b, []api.Job{{ID: "a\x1b]0;owned\x07\nb\tdone", Kind: api.KindLive, Status: api.StatusDone,
		CreatedAt: api.NewTime(at)}}); err != nil {
		t.Fatal(err)
	}
	if err := writeDeadLetters(&b, []store.SinkDelivery{{ID: 7, Sink: "hook", Attempts: 3, FailedAt: at,
		Event: api.Event{Type: "job.succeeded", JobID: "j\u202eexe.txt"}, LastError: "HTTP 410: \x1b[2J\x9bgone"}}); err != nil {
		t.Fatal(err)
	}
	if err := writeSinks(&b, []scribehook.SinkStatus{{Name: "hook", Configured: true, Disabled: true,
		Reason: "HTTP 410 \x1b[31mred\x1b[0m", Since: at}}); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"ID                        KIND  STATUS  CREATED              DURATION  FILE\n" +
		`a\x1b]0;owned\x07 b done  live  done    2026-11-20 10:04:05  -         -` + "\n" +
		"ID  SINK  EVENT          JOB             ATTEMPTS  FAILED               LAST ERROR\n" +
		`7   hook  job.succeeded  j\u202eexe.txt  3         2026-11-20 10:04:05  HTTP 410: \x1b[2J\x9bgone` + "\n" +
		"SINK  STATE     QUEUED  SINCE                REASON\n" +
		`hook  disabled  0       2026-11-20 10:04:05  HTTP 410 \x1b[31mred\x1b[0m` + "\n"
	if b.String() != want {
		t.Fatalf("tables =\n%s\nwant\n%s", b.String(), want)
	}
	if strings.ContainsAny(b.String(), "\x1b\x07\u009b\u202e") {
		t.Fatalf("a control character reached the output: %q", b.String())
	}
}
