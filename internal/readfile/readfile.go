package readfile

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

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
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s is not a regular file (%s): refused", path, fileType(st.Mode))
	}
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// ID names a file by device and inode, so that the same file reached by
// several names (hard links, symbolic links) is read once.
type ID struct{ Dev, Ino uint64 }

// Identify returns the ID of the regular file at path (links followed),
// without opening it; anything but a regular file is refused as Open does.
func Identify(path string) (ID, int64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return ID{}, 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return ID{}, 0, fmt.Errorf("%s is not a regular file (%s): refused", path, fileType(st.Mode))
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
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, nil
}
