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

// syncDirs makes the renames durable with one syncfs(2) of the file system of anyPath's
// directory, which the batch's directories share.
func syncDirs(anyPath string, _ map[string]bool) error {
	d, err := os.Open(filepath.Dir(anyPath))
	if err != nil {
		return fmt.Errorf("open directory for sync: %w", err)
	}
	defer d.Close()
	if err := syncfs(d); err != nil {
		return fmt.Errorf("sync directories: %w", err)
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
