package readfile

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// Open opens path for reading if it is a regular file (after following
// links): a FIFO, a device such as /dev/zero or /dev/urandom, a socket or
// a directory is refused with an error naming it. The file is opened
// without blocking, so a FIFO with no writer cannot hang the caller.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%v): refused", path, st.Mode().Type())
	}
	return f, nil
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
