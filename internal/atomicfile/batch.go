package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Batch writes several files as WriteFile writes one, but makes them durable together: each is
// written under a temporary name, one sync makes all of them durable, they are renamed into
// place, and one more sync makes the renames durable. After a crash every path holds its old
// content or its new, as with WriteFile; a writer of many small files (the file sink) pays two
// syncs per batch instead of two per file. A Batch is used by one goroutine.
type Batch struct {
	files []pendingFile
}

type pendingFile struct {
	tmp, path string
	f         *os.File
	group     int // the caller's group, whose error Commit reports
}

// Add writes content beside path under a temporary name; nothing is visible at path before
// Commit. group is the caller's tag for the file (the event it belongs to): Commit reports an
// error per group.
func (b *Batch) Add(group int, path string, content []byte) error {
	return b.AddFunc(group, path, contentOf(content))
}

// AddFunc is Add with the content written by write, which need not hold it whole.
func (b *Batch) AddFunc(group int, path string, write func(io.Writer) error) error {
	f, err := writeTemp(path, write)
	if err != nil {
		return err
	}
	b.files = append(b.files, pendingFile{tmp: f.Name(), path: path, f: f, group: group})
	return nil
}

// Drop removes the temporary files of group: one of its files could not be written, and the
// others must not appear without it.
func (b *Batch) Drop(group int) {
	kept := b.files[:0]
	for _, p := range b.files {
		if p.group != group {
			kept = append(kept, p)
			continue
		}
		_ = p.f.Close()
		_ = os.Remove(p.tmp)
	}
	b.files = kept
}

// Commit makes every added file durable and puts it in place, in the order added, and returns
// the errors by group (a group missing from the map succeeded). A failed sync fails every
// group; a failed rename fails its group, whose later files are then not renamed. The batch is
// empty afterwards.
func (b *Batch) Commit() map[int]error {
	files := b.files
	b.files = nil
	errs := map[int]error{}
	if len(files) == 0 {
		return errs
	}
	failAll := func(err error) map[int]error {
		for _, p := range files {
			_ = p.f.Close()
			_ = os.Remove(p.tmp)
			errs[p.group] = err
		}
		return errs
	}
	if err := syncFiles(files); err != nil {
		return failAll(err)
	}
	for _, p := range files {
		if err := p.f.Close(); err != nil && errs[p.group] == nil {
			errs[p.group] = fmt.Errorf("close %s: %w", filepath.Base(p.path), err)
		}
	}
	dirs := map[string]bool{}
	for _, p := range files {
		if errs[p.group] != nil {
			_ = os.Remove(p.tmp)
			continue
		}
		if err := os.Rename(p.tmp, p.path); err != nil {
			_ = os.Remove(p.tmp)
			errs[p.group] = fmt.Errorf("rename into %s: %w", filepath.Base(p.path), err)
			continue
		}
		dirs[filepath.Dir(p.path)] = true
	}
	if err := syncDirs(files[0].path, dirs); err != nil {
		for _, p := range files {
			if errs[p.group] == nil {
				errs[p.group] = err
			}
		}
	}
	return errs
}
