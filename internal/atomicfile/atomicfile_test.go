package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// A write that fails midway removes its temporary file and leaves the target as it was.
func TestWriteFileFailure(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "busy")
	if err := os.Mkdir(target, 0o755); err != nil { // renaming a file over a directory fails
		t.Fatal(err)
	}
	if err := WriteFile(target, []byte("content")); err == nil {
		t.Fatal("write over a directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "busy" || !entries[0].IsDir() {
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		t.Errorf("directory holds %v, want only busy/", got)
	}

}

// A file is written whole with its mode, in directories created on the way, and no temporary
// file stays behind.
func TestWriteFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "x.srt")
	for _, content := range []string{"first", "second, longer"} {
		if err := WriteFile(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries in the directory, want the file alone", len(entries))
	}
}
