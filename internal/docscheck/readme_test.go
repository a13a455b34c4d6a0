package docscheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The README's layout table ("## Layout") names, in the first cell of a row, backticked
// entries at the top of the repository: a folder ends in "/" (`cmd/scribehook/` names the
// folder cmd), a file does not. A first cell without backticks (the module root) is prose.
const (
	readmeDoc     = "README.md"
	layoutHeading = "## Layout"
)

// TestReadmeLayout checks that every top-level folder of the repository (tracked or new, not
// ignored, not hidden) has a row, and that every entry a row names exists.
func TestReadmeLayout(t *testing.T) {
	needTool(t, "git")
	root := moduleRoot(t)
	header, rows := sectionTable(t, filepath.Join(root, readmeDoc), layoutHeading)
	folderCol := column(t, readmeDoc, header, "folder")

	listed := map[string]bool{}
	for _, r := range rows {
		for _, entry := range backticked(r.cells[folderCol]) {
			top, _, _ := strings.Cut(entry, "/")
			listed[top] = true
			info, err := os.Stat(filepath.Join(root, entry))
			switch {
			case err != nil:
				t.Errorf("%s:%d names `%s`, which is not in the repository: %v", readmeDoc, r.line, entry, err)
			case info.IsDir() != strings.HasSuffix(entry, "/"):
				t.Errorf("%s:%d names `%s`: a folder ends in / and a file does not", readmeDoc, r.line, entry)
			}
		}
	}

	cmd := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("git ls-files in %s: %v", root, err)
	}
	missing := map[string]bool{}
	for file := range strings.Lines(string(out)) {
		top, _, isDir := strings.Cut(strings.TrimSpace(file), "/")
		if isDir && !strings.HasPrefix(top, ".") && !listed[top] && !missing[top] {
			missing[top] = true
			t.Errorf("%s's layout table has no row for the folder %s/", readmeDoc, top)
		}
	}
}
