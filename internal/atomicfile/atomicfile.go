package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with data.
func Write(path string, data []byte, mode fs.FileMode) error {
	return WriteWith(path, mode, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteWith replaces path with what fill writes (buffered).
func WriteWith(path string, mode fs.FileMode, fill func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriter(tmp)
	if err := fill(bw); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		done = true
		return fmt.Errorf("write %s: %w", path, err)
	}
	done = true
	return nil
}

// Target says whether path may be written by a user's output flag (a
// report, a histogram) and with which mode: a new file with mode, an
// existing regular file only when replace is given, keeping its own mode.
// A device, a FIFO, a socket or a directory is refused: renaming over
// /dev/null, as root, would replace the device itself.
func Target(path string, replace bool, mode fs.FileMode) (fs.FileMode, error) {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return mode, nil
	case err != nil:
		return 0, fmt.Errorf("%s: %w", path, err)
	case st.Mode()&fs.ModeSymlink != 0:
		if !replace {
			return 0, fmt.Errorf("%s is a symbolic link: give --force to replace the link with the file", path)
		}
		return mode, nil
	case !st.Mode().IsRegular():
		return 0, fmt.Errorf("%s is not a regular file (%s): name a file to write", path, kind(st.Mode()))
	case !replace:
		return 0, fmt.Errorf("%s exists: give --force to replace it (its mode is kept)", path)
	}
	return st.Mode().Perm(), nil
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "not a regular file"
}
