package readfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLimited(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path  string
		limit int64
		want  string // "" = read
	}{
		{small, 5, ""},
		{small, 4, "larger than 4"},
		{"/dev/zero", 1 << 20, "not a regular file"},
		{dir, 10, "not a regular file"},
		{filepath.Join(dir, "missing"), 10, "no such file"},
	} {
		b, err := Limited(tc.path, tc.limit)
		if tc.want == "" && (err != nil || string(b) != "12345") || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Limited(%s, %d) = %q, %v; want %q", tc.path, tc.limit, b, err, tc.want)
		}
	}
}
