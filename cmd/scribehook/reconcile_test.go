package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/reconcile"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/store"
)

// scribehook reconcile, with every callback dropped by the sandbox: --dry-run says what it
// would commit and commits nothing; the run commits the job's result to the inbox under the
// callback's key and takes the job off the list; a third run has nothing due.
func TestReconcileCommand(t *testing.T) {
	e := newCLIEnv(t, func(c *sandbox.Config) { c.Faults.DropCallbacks = 1 })
	out, errOut, err := e.run(nil, "submit", "--audio-url", e.files.URL+"/sample.wav")
	if err != nil {
		t.Fatalf("submit: %v\n%s", err, errOut)
	}
	id := strings.TrimSpace(strings.Split(out, "\n")[0])
	ctx := context.Background()
	testwait.For(t, "the service to finish the job", 30*time.Second, func() bool {
		j, err := e.client.GetPreRecorded(ctx, id)
		return err == nil && j.Status == api.StatusDone
	})
	cfg, err := os.ReadFile(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, e.cfgPath, append(cfg, "reconcile: {after: 1s}\n"...))
	time.Sleep(1100 * time.Millisecond) // After has passed since the creation

	run := func(args ...string) reconcileResult {
		t.Helper()
		out, errOut, err := e.run(nil, append([]string{"reconcile", "-o", "json"}, args...)...)
		if err != nil {
			t.Fatalf("reconcile %v: %v\n%s", args, err, errOut)
		}
		var res reconcileResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return res
	}
	dry := run("--dry-run")
	if !dry.DryRun || len(dry.Jobs) != 1 || dry.Jobs[0].JobID != id || dry.Jobs[0].Action != reconcile.ActionApplied ||
		dry.Jobs[0].Status != api.StatusDone || dry.Jobs[0].Deliveries != 1 || !dry.Jobs[0].Overdue {
		t.Fatalf("dry run: %+v", dry)
	}
	st := e.openStore()
	if _, err := st.ReconcileEntry(ctx, id); err != nil {
		t.Fatalf("the dry run changed the list: %v", err)
	}
	if n, err := st.InboxBacklog(ctx); err != nil || n != 0 {
		t.Fatalf("the dry run committed %d rows (%v)", n, err)
	}
	res := run()
	if res.DryRun || len(res.Jobs) != 1 || res.Jobs[0].Action != reconcile.ActionApplied || res.Jobs[0].Deliveries != 1 {
		t.Fatalf("run: %+v", res)
	}
	rows, err := st.PendingInbox(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Route != store.RouteReconcile || rows[0].DedupeKey != store.JobDedupeKey(id, api.EventTranscriptionSuccess) ||
		rows[0].Kind != api.CallbackJobSuccess || !strings.HasPrefix(rows[0].Headers[store.HeaderReconciled], "1;check=") {
		t.Fatalf("inbox rows %+v", rows)
	}
	var cb struct {
		ID      string          `json:"id"`
		Event   string          `json:"event"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(rows[0].Body, &cb); err != nil || cb.ID != id || cb.Event != api.EventTranscriptionSuccess || len(cb.Payload) == 0 {
		t.Fatalf("committed body %s (%v)", rows[0].Body, err)
	}
	if _, err := st.ReconcileEntry(ctx, id); err == nil {
		t.Fatal("the job is still listed")
	}
	out, _, err = e.run(nil, "reconcile")
	if err != nil || !strings.Contains(out, "nothing due") {
		t.Fatalf("third run: %q, %v", out, err)
	}
}
