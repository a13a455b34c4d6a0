package docscheck

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// module is the import path of the module whose docs these tests check.
const module = "github.com/scribehook/scribehook"

// moduleRoot is the folder holding the module's go.mod, found by walking up from the test's
// working directory (its package folder), so the tests run from wherever go test starts them.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			strings.Contains(string(b), "module "+module+"\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod of %s above the working directory", module)
		}
		dir = parent
	}
}

// needTool skips the test when name is not on PATH: the checks ask go (or git) itself.
func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not on PATH: %v", name, err)
	}
}

// tableRow is one body row of a Markdown table: its cells, trimmed, and its line in the file.
type tableRow struct {
	line  int
	cells []string
}

// sectionTable reads the first table under the heading that begins with heading (before the
// next heading of any level) and returns its header cells and body rows, without the
// separator row.
func sectionTable(t *testing.T, path, heading string) (header []string, rows []tableRow) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	inSection, inTable := false, false
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, heading):
			inSection = true
		case !inSection:
		case strings.HasPrefix(line, "|"):
			inTable = true
			cells := splitRow(line)
			if header == nil {
				header = cells
			} else if !isSeparator(cells) {
				rows = append(rows, tableRow{line: n, cells: cells})
			}
		case inTable, strings.HasPrefix(line, "#"):
			if header == nil {
				t.Fatalf("%s: no table under %q", path, heading)
			}
			return header, rows
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if header == nil {
		t.Fatalf("%s: no table under %q", path, heading)
	}
	return header, rows
}

// splitRow splits "| a | b \| c |" into ["a", "b | c"].
func splitRow(line string) []string {
	const escaped = "\x00"
	line = strings.ReplaceAll(line, `\|`, escaped)
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	cells := strings.Split(line, "|")
	for i, c := range cells {
		cells[i] = strings.TrimSpace(strings.ReplaceAll(c, escaped, "|"))
	}
	return cells
}

func isSeparator(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, "-: ") != "" {
			return false
		}
	}
	return true
}

var backtickedRE = regexp.MustCompile("`([^`]+)`")

// backticked is every `quoted` token of a cell, in order.
func backticked(cell string) []string {
	var out []string
	for _, m := range backtickedRE.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// column is the index of the header cell that begins with name; the test fails without one.
func column(t *testing.T, path string, header []string, name string) int {
	t.Helper()
	for i, h := range header {
		if strings.HasPrefix(strings.ToLower(h), name) {
			return i
		}
	}
	t.Fatalf("%s: the table has no column %q (header %q)", path, name, header)
	return -1
}
