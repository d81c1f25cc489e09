package readfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cloudprofiler-go/cp/internal/termsafe"
)

// ReadTimeout bounds a whole-file read (Limited): a regular file on a
// disk is read in milliseconds, and a file that waits for data (a kernel
// interface a filter let through) must not hang a tool.
const ReadTimeout = 10 * time.Second

// Open opens path for reading if it is a regular file (after following
// links): a FIFO, a device such as /dev/zero, /dev/urandom or /dev/ptmx, a
// socket or a directory is refused with an error naming it, and is never
// opened. The path is first resolved with O_PATH, which opens nothing (no
// driver's open runs: a link to /dev/ptmx allocates no pseudo-terminal, a
// FIFO cannot block); its type is read from that descriptor; only a
// regular file is then opened through it (/proc/self/fd), so the file
// checked is the file read, whatever is renamed in between.
func Open(path string) (*os.File, error) {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: termsafe.Escape(path), Err: err}
	}
	return reopen(pfd, path)
}

// InDir opens the file name directly inside the directory dir, a regular
// file and not a symbolic link: a run directory from elsewhere may hold a
// link to any file of the reader's (plan.yaml to /etc/shadow), which is
// never its own.
func InDir(dir, name string) (*os.File, error) {
	path := filepath.Join(dir, name)
	if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return nil, fmt.Errorf("%s: not a file name inside %s", termsafe.Escape(name), termsafe.Escape(dir))
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: termsafe.Escape(dir), Err: err}
	}
	defer unix.Close(dfd)
	pfd, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: termsafe.Escape(path), Err: err}
	}
	return reopen(pfd, path)
}

// reopen opens for reading the file that the O_PATH descriptor pfd holds,
// when it is a regular file on a disk, and closes pfd.
func reopen(pfd int, path string) (*os.File, error) {
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: termsafe.Escape(path), Err: err}
	}
	if err := regular(pfd, path, st.Mode); err != nil {
		return nil, err
	}
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: termsafe.Escape(path), Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// regular refuses what is not a regular file on a disk: a device, FIFO,
// socket, directory or link, and any file of a kernel interface (/proc,
// /sys, debugfs), where a "regular file" such as /proc/kmsg waits for
// data forever or /proc/self/mem reads another thing each time.
func regular(fd int, path string, mode uint32) error {
	if mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s is not a regular file (%s): refused", termsafe.Escape(path), fileType(mode))
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return &os.PathError{Op: "statfs", Path: termsafe.Escape(path), Err: err}
	}
	switch fs.Type {
	case unix.PROC_SUPER_MAGIC, unix.SYSFS_MAGIC, unix.DEBUGFS_MAGIC, unix.TRACEFS_MAGIC, unix.SECURITYFS_MAGIC,
		unix.CGROUP_SUPER_MAGIC, unix.CGROUP2_SUPER_MAGIC, unix.BPF_FS_MAGIC, unix.EFIVARFS_MAGIC:
		return fmt.Errorf("%s is a file of the kernel's (/proc, /sys), not a file on a disk: refused", termsafe.Escape(path))
	}
	return nil
}

// ID names a file by device and inode, so that the same file reached by
// several names (hard links, symbolic links) is read once.
type ID struct{ Dev, Ino uint64 }

// Identify returns the ID of the regular file at path (links followed),
// without opening it; anything but a regular file is refused as Open does.
func Identify(path string) (ID, int64, error) {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return ID{}, 0, &os.PathError{Op: "stat", Path: termsafe.Escape(path), Err: err}
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return ID{}, 0, &os.PathError{Op: "stat", Path: termsafe.Escape(path), Err: err}
	}
	if err := regular(pfd, path, st.Mode); err != nil {
		return ID{}, 0, err
	}
	return ID{Dev: st.Dev, Ino: st.Ino}, st.Size, nil
}

func fileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFLNK:
		return "a symbolic link"
	}
	return "not a regular file"
}

// Limited reads the regular file at path if it holds at most limit bytes.
func Limited(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	return All(f, limit)
}

// All reads the opened file f whole, at most limit bytes, within
// ReadTimeout, and closes it.
func All(f *os.File, limit int64) ([]byte, error) {
	defer f.Close()
	// A file the poller can wait on (opened non-blocking) honours the
	// deadline; a disk file ignores it and is read at once.
	_ = f.SetReadDeadline(time.Now().Add(ReadTimeout))
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", termsafe.Escape(f.Name()), err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", termsafe.Escape(f.Name()), limit)
	}
	return b, nil
}

// LimitedInDir reads the file name directly inside dir as InDir opens it,
// at most limit bytes.
func LimitedInDir(dir, name string, limit int64) ([]byte, error) {
	f, err := InDir(dir, name)
	if err != nil {
		return nil, err
	}
	return All(f, limit)
}
