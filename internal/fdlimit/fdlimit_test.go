package fdlimit

import (
	"os"
	"strings"
	"testing"
)

func TestFreeFollowsOpenDescriptors(t *testing.T) {
	before, ok := Free()
	if !ok {
		t.Skip("no /proc here: descriptors are not counted")
	}
	var files []*os.File
	for i := 0; i < 10; i++ {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	after, _ := Free()
	for _, f := range files {
		f.Close()
	}
	if before < (1<<30) && before-after != 10 {
		t.Fatalf("free %d before and %d after opening 10 files", before, after)
	}
	if err := Check(1); err != nil {
		t.Fatal(err)
	}
	if before < (1 << 30) {
		if err := Check(before + 1000); err == nil || !strings.Contains(err.Error(), "ulimit -n") {
			t.Fatalf("need more than free: %v", err)
		}
	}
}
