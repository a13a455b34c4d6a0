// Package atomicfile writes files that readers never see half-written and a crash never
// leaves torn: the artifact directory and the file sink share it.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFile replaces path with content: written and synced under a temporary name in the
// same directory, renamed over path, and the directory synced, so that after a crash path
// holds the old content or the new, and nobody ever reads half a file.
func WriteFile(path string, content []byte) error {
	return WriteFileFunc(path, contentOf(content))
}

// WriteFileFunc is WriteFile with the content written by write, which need not hold it whole.
func WriteFileFunc(path string, write func(io.Writer) error) (err error) {
	f, err := writeTemp(path, write)
	if err != nil {
		return err
	}
	tmp, base := f.Name(), filepath.Base(path)
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err = f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", base, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", base, err)
	}
	return Rename(tmp, path)
}

// writeTemp writes write's content under a temporary name beside path, for WriteFileFunc and
// Batch.AddFunc; on an error nothing is left behind.
func writeTemp(path string, write func(io.Writer) error) (*os.File, error) {
	dir, base := filepath.Split(path)
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create temporary file: %w", err)
	}
	if err = write(f); err != nil {
		err = fmt.Errorf("write %s: %w", base, err)
	} else if err = f.Chmod(0o644); err != nil { // CreateTemp makes 0600; these are outputs meant to be read by other tools.
		err = fmt.Errorf("chmod %s: %w", base, err)
	}
	if err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// Rename moves tmp, a file written and synced in path's directory, over path, and syncs the
// directory: the last step of WriteFile, for a file another writer made (a database backup).
func Rename(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename into %s: %w", filepath.Base(path), err)
	}
	return syncDir(filepath.Dir(path))
}

// MkdirAll creates dir and its missing parents, syncing each parent after a creation so the
// new entry survives a crash.
func MkdirAll(dir string) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create directory: %w", err)
	}
	return syncDir(parent)
}

// contentOf writes content, for the writers that take a func.
func contentOf(content []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(content)
		return err
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory for sync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}
