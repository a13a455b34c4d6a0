package docscheck

import (
	"bytes"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The package table of docs/design.md ("## Packages") has four columns, found by their
// headers:
//
//   - folder: one or more backticked folders relative to the module root, each ending in "/"
//     (`store/`, `internal/netguard/`), or `.` for the root package alone. A row owns every
//     non-test package in its folders and below them, except the packages of a row with a
//     longer folder (with rows `internal/` and `internal/netguard/`, the package internal/netguard
//     would be the second's).
//   - imports of ours: every package of the module that the row's packages import, other than
//     the row's own packages, as backticked paths relative to the module root (`.` is the root
//     package). A cell without backticks names nothing; prose there must not use backticks.
//   - layer: a whole number. Every import goes to a row of a lower layer: no package reaches
//     up, nor sideways to a row of its own layer.
//
// The packages are those of `go list ./...` in the module and in the modules nested in it (the
// examples), each with at least one non-test Go file; a folder of tests alone (deploy/) is no
// package here.
const (
	designDoc     = "docs/design.md"
	designHeading = "## Packages"
)

// claims are what the text under the table says a package knows nothing of: none of its
// dependencies, direct or not (go list's Deps), may be the other.
var claims = []struct{ pkg, unreachable string }{
	{"sinks", "github.com/gofiber/fiber/v2"},
	{"sinks", module + "/store/sqlite"},
	{"sinks", module + "/store/postgres"},
	{"subtitles", "github.com/gofiber/fiber/v2"},
	{"subtitles", module + "/store"},
	{"receiver", module + "/handlers"},
	// The kit traces through OpenTelemetry's API alone; the SDK and the exporters' gRPC are
	// linked by package tracing, which the binary imports.
	{".", "go.opentelemetry.io/otel/sdk"},
	{".", "google.golang.org/grpc"},
	{".", module + "/tracing"},
}

// goPackage is one non-test package as go list reports it.
type goPackage struct {
	path    string   // relative to the module root: "." for the root package, "store/sqlite"
	imports []string // the packages of the module it imports, relative likewise
	deps    []string // every package it depends on, directly or not: full import paths
}

// designRow is one row of the package table.
type designRow struct {
	line    int
	name    string // the folder cell as written, for messages
	folders []string
	imports map[string]bool
	layer   int
}

func (r *designRow) String() string {
	return designDoc + ":" + strconv.Itoa(r.line) + " row " + r.name + " (layer " + strconv.Itoa(r.layer) + ")"
}

func TestDesignPackageTable(t *testing.T) {
	needTool(t, "go")
	root := moduleRoot(t)
	rows := readDesignTable(t, filepath.Join(root, designDoc))
	pkgs := listPackages(t, root)

	t.Run("rows", func(t *testing.T) {
		var problems []string
		problems = append(problems, checkCoverage(rows, pkgs)...)
		for _, r := range rows {
			problems = append(problems, checkRow(r, rows, pkgs)...)
		}
		if len(problems) > 0 {
			t.Errorf("%s's package table does not match the import graph (go list):\n%s\n"+
				"The table says what go list says: fix the row, or the code for an import that reaches up "+
				"(notation: internal/docscheck/design_test.go).",
				designDoc, strings.Join(problems, "\n"))
		}
	})

	t.Run("claims", func(t *testing.T) {
		for _, c := range claims {
			i := slices.IndexFunc(pkgs, func(p goPackage) bool { return p.path == c.pkg })
			if i < 0 {
				t.Errorf("%s says %s knows nothing of %s, but there is no package %s", designDoc, c.pkg, c.unreachable, c.pkg)
				continue
			}
			for _, d := range pkgs[i].deps {
				if d == c.unreachable || strings.HasPrefix(d, c.unreachable+"/") {
					t.Errorf("%s says %s knows nothing of %s, but it depends on %s (go list -deps ./%s)",
						designDoc, c.pkg, c.unreachable, d, c.pkg)
				}
			}
		}
	})
}

// checkCoverage reports the packages of no row, the rows of no package and folders given twice.
func checkCoverage(rows []*designRow, pkgs []goPackage) []string {
	var problems []string
	owned := map[*designRow]int{}
	for _, p := range pkgs {
		r := rowOf(rows, p.path)
		if r == nil {
			problems = append(problems, "package `"+p.path+"` is in no row: add a row for its folder, or its folder to a row")
			continue
		}
		owned[r]++
	}
	seen := map[string]*designRow{}
	for _, r := range rows {
		if owned[r] == 0 {
			problems = append(problems, r.String()+": no non-test package is in it; remove the row or fix its folder")
		}
		for _, f := range r.folders {
			if other, ok := seen[f]; ok {
				problems = append(problems, r.String()+": folder `"+f+"` is also in "+other.String())
			}
			seen[f] = r
		}
	}
	return problems
}

// checkRow compares a row's imports cell with the imports of its packages, and checks that
// each import goes to a lower layer.
func checkRow(r *designRow, rows []*designRow, pkgs []goPackage) []string {
	var problems []string
	importers := map[string][]string{} // imported package → the row's packages importing it
	for _, p := range pkgs {
		if rowOf(rows, p.path) != r {
			continue
		}
		for _, imp := range p.imports {
			to := rowOf(rows, imp)
			if to == r {
				continue
			}
			importers[imp] = append(importers[imp], p.path)
			if to != nil && to.layer >= r.layer {
				problems = append(problems, r.String()+": `"+p.path+"` imports `"+imp+"` of "+to.String()+
					": an import must go to a lower layer")
			}
		}
	}
	mismatch := false
	for _, imp := range slices.Sorted(maps.Keys(importers)) {
		if !r.imports[imp] {
			mismatch = true
			problems = append(problems, r.String()+": `"+strings.Join(importers[imp], "`, `")+"` imports `"+imp+
				"`, which the row's imports cell does not list")
		}
	}
	for _, imp := range slices.Sorted(maps.Keys(r.imports)) {
		if importers[imp] == nil {
			mismatch = true
			problems = append(problems, r.String()+": the imports cell lists `"+imp+"`, which no package of the row imports")
		}
	}
	if mismatch {
		cell := "—"
		if len(importers) > 0 {
			cell = "`" + strings.Join(slices.Sorted(maps.Keys(importers)), "`, `") + "`"
		}
		problems = append(problems, "    the imports cell as go list has it: "+cell)
	}
	return problems
}

// rowOf is the row that owns the package at path (relative to the module root): the row with
// the longest folder holding it, or nil.
func rowOf(rows []*designRow, path string) *designRow {
	var best *designRow
	bestLen := -1
	for _, r := range rows {
		for _, f := range r.folders {
			holds := f == path || // "." holds the root package alone
				f != "." && (path == strings.TrimSuffix(f, "/") || strings.HasPrefix(path, f))
			if holds && len(f) > bestLen {
				best, bestLen = r, len(f)
			}
		}
	}
	return best
}

func readDesignTable(t *testing.T, path string) []*designRow {
	t.Helper()
	header, body := sectionTable(t, path, designHeading)
	folderCol := column(t, path, header, "folder")
	importsCol := column(t, path, header, "imports")
	layerCol := column(t, path, header, "layer")
	var rows []*designRow
	for _, b := range body {
		where := designDoc + ":" + strconv.Itoa(b.line)
		if len(b.cells) != len(header) {
			t.Fatalf("%s: %d cells, the header has %d", where, len(b.cells), len(header))
		}
		r := &designRow{line: b.line, name: b.cells[folderCol], imports: map[string]bool{}}
		r.folders = backticked(b.cells[folderCol])
		if len(r.folders) == 0 {
			t.Fatalf("%s: the folder cell %q names no `folder/`", where, b.cells[folderCol])
		}
		for _, f := range r.folders {
			if f != "." && (!strings.HasSuffix(f, "/") || strings.HasPrefix(f, "/")) {
				t.Fatalf("%s: folder `%s` must be relative to the module root and end in /, or be `.`", where, f)
			}
		}
		for _, imp := range backticked(b.cells[importsCol]) {
			r.imports[strings.TrimSuffix(imp, "/")] = true
		}
		layer, err := strconv.Atoi(strings.TrimSpace(b.cells[layerCol]))
		if err != nil {
			t.Fatalf("%s: layer %q is not a whole number", where, b.cells[layerCol])
		}
		r.layer = layer
		rows = append(rows, r)
	}
	return rows
}

// listPackages lists the non-test packages of the module at root and of the modules nested
// in it.
func listPackages(t *testing.T, root string) []goPackage {
	t.Helper()
	var pkgs []goPackage
	for _, dir := range moduleDirs(t, root) {
		pkgs = append(pkgs, goList(t, dir)...)
	}
	return pkgs
}

// moduleDirs is root and every folder below it holding a go.mod, outside hidden folders,
// node_modules and testdata.
func moduleDirs(t *testing.T, root string) []string {
	t.Helper()
	dirs := []string{root}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		switch {
		case d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata"):
			return filepath.SkipDir
		case !d.IsDir() && name == "go.mod" && filepath.Dir(path) != root:
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// goList runs go list ./... in the module at dir. A package of tests alone prints an empty line.
// It stats every Go file the answer came from: go list runs in a process of its own, so without
// that go test's cache would not know that an edited import changes this test's result.
func goList(t *testing.T, dir string) []goPackage {
	t.Helper()
	const format = `{{if or .GoFiles .CgoFiles}}{{.ImportPath}}	{{join .Imports " "}}	{{join .Deps " "}}	` +
		`{{.Dir}}	{{join .GoFiles " "}} {{join .CgoFiles " "}}{{end}}`
	cmd := exec.Command("go", "list", "-f", format, "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./... in %s: %v\n%s", dir, err, stderr.Bytes())
	}
	var pkgs []goPackage
	for line := range strings.Lines(string(out)) {
		fields := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(fields) != 5 {
			continue
		}
		for _, file := range strings.Fields(fields[4]) {
			if _, err := os.Stat(filepath.Join(fields[3], file)); err != nil {
				t.Fatal(err)
			}
		}
		path, ok := relative(fields[0])
		if !ok {
			t.Fatalf("go list in %s: package %s is outside %s", dir, fields[0], module)
		}
		p := goPackage{path: path, deps: strings.Fields(fields[2])}
		for _, imp := range strings.Fields(fields[1]) {
			if rel, ok := relative(imp); ok {
				p.imports = append(p.imports, rel)
			}
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// relative is an import path of the module (or of a module nested in it, whose path extends
// the module's) relative to the module root, "." for the root package.
func relative(importPath string) (string, bool) {
	if importPath == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(importPath, module+"/")
	return rel, ok
}
