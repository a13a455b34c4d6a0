package sqlite

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/sirupsen/logrus"
)

// TestPingDiskSpace: Ping fails, naming the cause, when the database's file system has less
// free space than the minimum, and when the file cannot be written.
func TestPingDiskSpace(t *testing.T) {
	free := func(n uint64) func(string) (uint64, bool, error) {
		return func(string) (uint64, bool, error) { return n, true, nil }
	}
	writable := func(string) error { return nil }
	for _, tc := range []struct {
		name    string
		opts    Config
		fsys    fileSystem
		wantErr string // "" for success
	}{
		{"plenty", Config{}, fileSystem{free: free(1 << 30), canWrite: writable}, ""},
		{"exactly the default minimum", Config{}, fileSystem{free: free(64 << 20), canWrite: writable}, ""},
		{"below the default minimum", Config{}, fileSystem{free: free(3 << 20), canWrite: writable},
			"database file system is nearly full: 3.0 MiB free in "},
		{"below a set minimum", Config{MinFreeBytes: 1 << 30}, fileSystem{free: free(512 << 20), canWrite: writable},
			"512.0 MiB free in %DIR%, below the minimum of 1024.0 MiB"},
		{"check turned off", Config{MinFreeBytes: -1}, fileSystem{free: free(0), canWrite: writable}, ""},
		{"unknown on this platform", Config{}, fileSystem{free: func(string) (uint64, bool, error) { return 0, false, nil }, canWrite: writable}, ""},
		{"statfs fails", Config{}, fileSystem{free: func(string) (uint64, bool, error) { return 0, false, syscall.EIO }, canWrite: writable},
			"free space of the database's file system (%DIR%): input/output error"},
		{"read-only file system", Config{}, fileSystem{free: free(1 << 30), canWrite: func(string) error { return syscall.EROFS }},
			"database file %PATH% is not writable: read-only file system"},
		{"file not writable", Config{}, fileSystem{free: free(1 << 30), canWrite: func(string) error { return syscall.EACCES }},
			"database file %PATH% is not writable: permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := tc.opts
			opts.Path = filepath.Join(dir, "db.sqlite")
			opts.fsys = tc.fsys
			s := openTemp(t, opts)
			err := s.Ping(t.Context())
			want := strings.NewReplacer("%DIR%", dir, "%PATH%", opts.Path).Replace(tc.wantErr)
			switch {
			case want == "" && err != nil:
				t.Errorf("Ping: %v", err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("Ping = %v, want an error with %q", err, want)
			}
		})
	}
}

// TestPingRealFileSystem: the real free-space and access checks pass on a writable temp dir.
func TestPingRealFileSystem(t *testing.T) {
	s := openTemp(t, Config{})
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	free, known, err := s.fsys.free(filepath.Dir(s.path))
	if err != nil || (known && free == 0) || (runtime.GOOS == "linux" && !known) {
		t.Errorf("free space of the temp dir = %d, %v, %v", free, known, err)
	}
	if runtime.GOOS != "linux" {
		return // writability is left to SQLite there
	}
	// The real access check: it must see a file that cannot be written (root may write any
	// file, but not one that is missing).
	if err := s.fsys.canWrite(filepath.Join(filepath.Dir(s.path), "missing.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("canWrite of a missing file = %v, want it to not exist", err)
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(t.TempDir(), "ro.db")
		if err := os.WriteFile(ro, nil, 0o444); err != nil {
			t.Fatal(err)
		}
		if err := s.fsys.canWrite(ro); !errors.Is(err, fs.ErrPermission) {
			t.Errorf("canWrite of a read-only file = %v, want permission denied", err)
		}
	}
}

// TestOpenNamesTheCause: Open says why a database cannot be opened instead of SQLite's
// "unable to open database file: no such file or directory".
func TestOpenNamesTheCause(t *testing.T) {
	probeErr := func(err error) fileSystem {
		return fileSystem{probeDir: func(string) error { return &fs.PathError{Op: "open", Path: "x", Err: err} }}
	}
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, dir string) string // returns the database path
		fsys   fileSystem
		root   bool // the case works as root too
		want   string
		reason error // the SQLite error must stay reachable: errors.As a sqlite3 error
	}{
		{
			name:  "missing directory",
			setup: func(t *testing.T, dir string) string { return filepath.Join(dir, "nope", "x.db") },
			root:  true,
			want:  "open database %DIR%/nope/x.db: directory %DIR%/nope does not exist",
		},
		{
			name: "read-only directory",
			setup: func(t *testing.T, dir string) string {
				ro := mkdir(t, filepath.Join(dir, "ro"), 0o555)
				t.Cleanup(func() { _ = os.Chmod(ro, 0o755) })
				return filepath.Join(ro, "x.db")
			},
			want: "open database %DIR%/ro/x.db: directory %DIR%/ro is not writable (permission denied)",
		},
		{
			// As root: SQLite cannot open a directory as a database, and the injected probe
			// answers like a read-only file system.
			name:  "read-only file system (injected probe)",
			setup: func(t *testing.T, dir string) string { return mkdir(t, filepath.Join(dir, "x.db"), 0o755) },
			fsys:  probeErr(syscall.EROFS),
			root:  true,
			want:  "open database %DIR%/x.db: directory %DIR% is not writable (read-only file system)",
		},
		{
			name: "parent is a file",
			setup: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "f")
				touch(t, p)
				return filepath.Join(p, "x.db")
			},
			root: true,
			want: "open database %DIR%/f/x.db: %DIR%/f is not a directory",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.root && os.Geteuid() == 0 {
				t.Skip("running as root: directory modes do not stop root (the injected probe covers it)")
			}
			dir := t.TempDir()
			path := tc.setup(t, dir)
			s, err := Open(t.Context(), Config{Path: path, fsys: tc.fsys})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			want := strings.ReplaceAll(tc.want, "%DIR%", dir)
			if err.Error() != want {
				t.Errorf("Open error = %q\nwant          %q", err, want)
			}
			if errors.Unwrap(err) == nil {
				t.Errorf("the SQLite error is not kept under %q", err)
			}
		})
	}
}

// TestExplainOpen covers the causes that need a failing SQLite open with a directory that
// looks fine: an existing file that cannot be written, and nothing to explain.
func TestExplainOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.db")
	touch(t, path)
	log := logrus.NewEntry(logrus.New())
	sqliteErr := errors.New("unable to open database file: no such file or directory")
	fsys := fileSystem{canWrite: func(string) error { return syscall.EROFS }}.withDefaults()
	err := explainOpen(path, fsys, sqliteErr, log)
	if want := "open database " + path + ": database file " + path + " is not writable (read-only file system)"; err.Error() != want {
		t.Errorf("explainOpen = %q, want %q", err, want)
	}
	if !errors.Is(err, sqliteErr) {
		t.Errorf("explainOpen lost the SQLite error")
	}
	if err := explainOpen(path, fileSystem{}.withDefaults(), sqliteErr, log); err != sqliteErr {
		t.Errorf("explainOpen with nothing wrong = %v, want the error unchanged", err)
	}
	// The probe leaves nothing behind.
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory after the probe holds %d entries, want only x.db", len(entries))
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// mkdir creates the directory path with mode and returns path.
func mkdir(t *testing.T, path string, mode os.FileMode) string {
	t.Helper()
	if err := os.Mkdir(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}
