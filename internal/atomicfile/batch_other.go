//go:build !linux

package atomicfile

import (
	"fmt"
	"path/filepath"
)

// syncFiles syncs each file: without syncfs(2), one call per file.
func syncFiles(files []pendingFile) error {
	for _, p := range files {
		if err := p.f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", filepath.Base(p.path), err)
		}
	}
	return nil
}

// syncDirs syncs each directory once.
func syncDirs(_ string, dirs map[string]bool) error {
	for dir := range dirs {
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	return nil
}
