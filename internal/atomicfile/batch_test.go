package atomicfile

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A batch puts every file in place with its mode, nothing before Commit; a dropped group and a
// group whose rename fails leave nothing of theirs behind, and the others are not held back.
func TestBatch(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "busy"), 0o755); err != nil { // renaming a file over it fails
		t.Fatal(err)
	}
	var b Batch
	add := func(group int, name, content string) {
		t.Helper()
		if err := b.Add(group, filepath.Join(dir, name), []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	add(0, "a.txt", "alpha")
	add(1, "b.txt", "beta")
	add(1, "c.txt", "gamma")
	add(2, "dropped.txt", "never")
	add(3, "busy", "over a directory")
	add(3, "after-busy.txt", "not renamed: its group failed first")
	add(4, "d.txt", "delta")
	b.Drop(2)
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); !os.IsNotExist(err) {
		t.Errorf("a.txt visible before Commit (stat: %v)", err)
	}
	errs := b.Commit()
	if len(errs) != 1 || errs[3] == nil {
		t.Errorf("errors = %v, want one, for group 3", errs)
	}
	for name, want := range map[string]string{"a.txt": "alpha", "b.txt": "beta", "c.txt": "gamma", "d.txt": "delta"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
			continue
		}
		if fi, _ := os.Stat(filepath.Join(dir, name)); fi.Mode().Perm() != 0o644 {
			t.Errorf("%s mode = %v, want 0644", name, fi.Mode().Perm())
		}
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"a.txt", "b.txt", "busy", "c.txt", "d.txt"}; !slices.Equal(names, want) {
		t.Errorf("directory holds %v, want %v", names, want)
	}
	if errs := b.Commit(); len(errs) != 0 {
		t.Errorf("second Commit = %v, want nothing to do", errs)
	}
}
