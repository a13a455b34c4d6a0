package main

import (
	"os"
	"strings"
	"testing"
)

// TestMigrateCheckThenApply: --check on a database that does not exist yet lists every
// migration and creates nothing; migrate applies them; --check then finds nothing to run.
func TestMigrateCheckThenApply(t *testing.T) {
	dir, db := tempDB(t)
	cfg := writeSQLiteConfig(t, dir, db)
	out, _, err := runCmd(t.Context(), nil, "migrate", "--check", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"sqlite " + db + ": schema version 0, this binary's is ",
		" would run, in order:\n",
		"  0001_init.sql                    Initial schema.",
		"  0005_sink_state.sql              sink_state keeps a sink's disabled state across restarts",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("migrate --check printed %q, want it to contain %q", out, want)
		}
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("migrate --check created the database: %v", err)
	}
	applied, _, err := runCmd(t.Context(), nil, "migrate", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.ReplaceAll(out, "would run", "applied"); !strings.HasPrefix(applied, want) || !strings.Contains(applied, "schema version now ") {
		t.Errorf("migrate printed %q, want the plan checked (%q) as applied", applied, want)
	}
	again, _, err := runCmd(t.Context(), nil, "migrate", "--check", "--config", cfg)
	if err != nil || !strings.Contains(again, "up to date: nothing to run") {
		t.Errorf("migrate --check after migrate: %q, %v", again, err)
	}
}
