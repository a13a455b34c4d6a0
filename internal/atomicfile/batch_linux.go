package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// syncFiles makes the files' contents durable with one syncfs(2) of their file system: one
// call however many files (they share a file system: the batch's writer keeps its files under
// one directory). Other files of that file system are flushed too; nothing else changes.
func syncFiles(files []pendingFile) error {
	if err := syncfs(files[0].f); err != nil {
		return fmt.Errorf("sync %d files: %w", len(files), err)
	}
	return nil
}

// syncDirs makes the renames into dirs durable, with one syncfs(2) through any of them.
func syncDirs(anyPath string, dirs map[string]bool) error {
	for dir := range dirs {
		d, err := os.Open(dir)
		if err != nil {
			return fmt.Errorf("open directory for sync: %w", err)
		}
		defer d.Close()
		if err := syncfs(d); err != nil {
			return fmt.Errorf("sync directory %s: %w", filepath.Base(dir), err)
		}
		return nil
	}
	return nil
}

func syncfs(f *os.File) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.Syncfs(int(fd)) }); err != nil {
		return err
	}
	return serr
}
