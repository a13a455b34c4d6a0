//go:build linux

package sqlite

import "syscall"

func freeBytes(dir string) (uint64, bool, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false, err
	}
	return st.Bavail * uint64(st.Bsize), true, nil
}

// canWrite asks access(2), which opens nothing: closing a descriptor of the database file
// would drop the POSIX locks SQLite holds on it in this process.
func canWrite(path string) error {
	const wOK = 0x2 // W_OK
	return syscall.Access(path, wOK)
}
