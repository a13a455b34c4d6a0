package docscheck

import (
	"slices"
	"testing"
)

// TestChecksReport runs the table checks on a made-up graph, so that what they report (and
// what the next engineer reads when the real table drifts) is itself tested.
func TestChecksReport(t *testing.T) {
	low := &designRow{line: 10, name: "`low/`", folders: []string{"low/"}, layer: 0, imports: map[string]bool{}}
	mid := &designRow{line: 11, name: "`mid/`", folders: []string{"mid/"}, layer: 1,
		imports: map[string]bool{"low": true, "gone": true}}
	top := &designRow{line: 12, name: "`.`", folders: []string{"."}, layer: 2, imports: map[string]bool{"mid": true}}
	empty := &designRow{line: 13, name: "`old/`", folders: []string{"old/", "low/"}, layer: 0, imports: map[string]bool{}}
	rows := []*designRow{low, mid, top, empty}
	pkgs := []goPackage{
		{path: "low", imports: []string{"low/sub", "."}}, // an import of the row's own, and one up
		{path: "low/sub"},
		{path: "mid/a", imports: []string{"low", "mid/b"}},
		{path: "mid/b", imports: []string{"low", "new"}},
		{path: "."},
		{path: "stray"},
	}
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"coverage", checkCoverage(rows, pkgs), []string{
			"package `stray` is in no row: add a row for its folder, or its folder to a row",
			"docs/design.md:13 row `old/` (layer 0): no non-test package is in it; remove the row or fix its folder",
			"docs/design.md:13 row `old/` (layer 0): folder `low/` is also in docs/design.md:10 row `low/` (layer 0)",
		}},
		{"low", checkRow(low, rows, pkgs), []string{
			"docs/design.md:10 row `low/` (layer 0): `low` imports `.` of docs/design.md:12 row `.` (layer 2): an import must go to a lower layer",
			"docs/design.md:10 row `low/` (layer 0): `low` imports `.`, which the row's imports cell does not list",
			"    the imports cell as go list has it: `.`",
		}},
		{"mid", checkRow(mid, rows, pkgs), []string{
			"docs/design.md:11 row `mid/` (layer 1): `mid/b` imports `new`, which the row's imports cell does not list",
			"docs/design.md:11 row `mid/` (layer 1): the imports cell lists `gone`, which no package of the row imports",
			"    the imports cell as go list has it: `low`, `new`",
		}},
		{"top", checkRow(top, rows, pkgs), []string{
			"docs/design.md:12 row `.` (layer 2): the imports cell lists `mid`, which no package of the row imports",
			"    the imports cell as go list has it: —",
		}},
	}
	for _, tt := range tests {
		if !slices.Equal(tt.got, tt.want) {
			t.Errorf("%s reports\n%q\nwant\n%q", tt.name, tt.got, tt.want)
		}
	}
}

func TestRowOf(t *testing.T) {
	internal := &designRow{folders: []string{"internal/"}}
	guard := &designRow{folders: []string{"internal/netguard/"}}
	root := &designRow{folders: []string{"."}}
	group := &designRow{folders: []string{"bench/", "e2e/"}}
	rows := []*designRow{internal, guard, root, group}
	for path, want := range map[string]*designRow{
		".":                  root,
		"internal":           internal,
		"internal/wmlog":     internal,
		"internal/netguard":  guard,
		"internal/netguardx": internal,
		"e2e/ui/launch":      group,
		"bench/load":         group,
		"api":                nil,
		"benchmarks":         nil,
	} {
		if got := rowOf(rows, path); got != want {
			t.Errorf("rowOf(%q) = %v, want %v", path, got, want)
		}
	}
}
