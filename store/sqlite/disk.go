package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sirupsen/logrus"
)

// fileSystem is what Open and Ping ask the operating system about the database's file and
// directory. The zero value asks the real one; tests replace single functions.
type fileSystem struct {
	// free returns the bytes of dir's file system available to this process; known is false
	// where the platform cannot tell (then nothing is checked).
	free func(dir string) (bytes uint64, known bool, err error)
	// canWrite returns nil when this process may write the existing file at path, else the
	// reason (read-only file system, permission denied).
	canWrite func(path string) error
	// probeDir creates a file in dir and removes it at once: nil when files can be created
	// there, else the error of the attempt.
	probeDir func(dir string) error
}

func (f fileSystem) withDefaults() fileSystem {
	if f.free == nil {
		f.free = freeBytes
	}
	if f.canWrite == nil {
		f.canWrite = canWrite
	}
	if f.probeDir == nil {
		f.probeDir = probeDir
	}
	return f
}

func probeDir(dir string) error {
	f, err := os.CreateTemp(dir, ".scribehook-probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}

// checkDisk is Ping's check that a delivery can still be stored.
func (s *Store) checkDisk() error {
	if err := s.fsys.canWrite(s.path); err != nil {
		return fmt.Errorf("database file %s is not writable: %s", s.path, reason(err))
	}
	if s.minFree <= 0 {
		return nil
	}
	dir := filepath.Dir(s.path)
	free, known, err := s.fsys.free(dir)
	if err != nil {
		return fmt.Errorf("free space of the database's file system (%s): %w", dir, err)
	}
	if known && free < uint64(s.minFree) {
		return fmt.Errorf("database file system is nearly full: %s free in %s, below the minimum of %s",
			mib(free), dir, mib(uint64(s.minFree)))
	}
	return nil
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// reason is the operating system's words for err (the errno's text, such as "read-only file
// system"), without the path and operation a PathError adds.
func reason(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

// openError names the cause of a failed Open that SQLite reports only as "unable to open
// database file" (often with a misleading "no such file or directory"); the SQLite error stays
// reachable through errors.Unwrap.
type openError struct {
	msg string
	err error
}

func (e *openError) Error() string { return e.msg }
func (e *openError) Unwrap() error { return e.err }

// explainOpen looks for the cause of err, Open's failure, in the database's directory and
// file: a directory that does not exist or where no file can be created (SQLite must create the
// database and its -wal and -shm files there), or a database file this process may not write.
// It returns err unchanged when they look fine. It runs only after a failure, so a database
// that SQLite can open (a read-only file in a writable directory, for listing) still opens.
func explainOpen(path string, fsys fileSystem, err error, log *logrus.Entry) error {
	dir := filepath.Dir(path)
	var msg string
	if fi, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
		msg = fmt.Sprintf("directory %s does not exist", dir)
	} else if serr != nil {
		msg = fmt.Sprintf("directory %s cannot be read (%s)", dir, reason(serr))
	} else if !fi.IsDir() {
		msg = fmt.Sprintf("%s is not a directory", dir)
	} else if perr := fsys.probeDir(dir); perr != nil {
		msg = fmt.Sprintf("directory %s is not writable (%s)", dir, reason(perr))
	} else if _, serr := os.Stat(path); serr == nil {
		if werr := fsys.canWrite(path); werr != nil {
			msg = fmt.Sprintf("database file %s is not writable (%s)", path, reason(werr))
		}
	}
	if msg == "" {
		return err
	}
	log.WithError(err).Debug("sqlite: open failed")
	return &openError{msg: fmt.Sprintf("open database %s: %s", path, msg), err: err}
}
