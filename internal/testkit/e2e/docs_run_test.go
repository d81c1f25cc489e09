package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// docBlock is a shell block of a document marked runnable (```sh runnable).
type docBlock struct {
	file string // relative to the module
	line int    // of the opening fence
	text string
}

// runnableBlocks reads the runnable shell blocks of a Markdown text.
func runnableBlocks(file string, md []byte) []docBlock {
	var out []docBlock
	var cur *docBlock
	sc := bufio.NewScanner(bytes.NewReader(md))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```sh runnable":
			cur = &docBlock{file: file, line: n}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	return out
}

// runDocBlock runs a block as the README's reader would, from a folder that
// holds the checkout's bin/, profiles/ and examples/, in a network
// namespace of its own (its fixed ports are its own; only loopback is
// up), with every process it started stopped at its end. The error says
// where the block is and what it printed.
func runDocBlock(t *testing.T, b docBlock, timeout time.Duration) error {
	t.Helper()
	work := t.TempDir()
	root := moduleDir(t)
	for _, link := range []struct{ name, to string }{{"bin", binDir}, {"profiles", filepath.Join(root, "profiles")}, {"examples", filepath.Join(root, "examples")}} {
		if err := os.Symlink(link.to, filepath.Join(work, link.name)); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	script := "set -euo pipefail\nip link set lo up\n" + b.text
	cmd := exec.CommandContext(ctx, "unshare", "--net", "--", "bash", "-c", script)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+binDir+":"+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A server the block started in the background holds its output open
	// after the block's end: stop reading a second after the block exits.
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // the block exited 0; what it left running held the output
	}
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what the block left running in the background
	}
	if err != nil {
		return fmt.Errorf("%s:%d: %v\n%s", b.file, b.line, err, tail(out.String(), 40))
	}
	return nil
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestDocsRunnableBlocks runs every shell block of the README and docs/
// marked runnable (```sh runnable) and fails on a non-zero exit, listing
// the blocks it ran.
func TestDocsRunnableBlocks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("each block runs in a network namespace of its own (unshare --net): needs root")
	}
	root := moduleDir(t)
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var blocks []docBlock
	for _, f := range files {
		md, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		blocks = append(blocks, runnableBlocks(rel, md)...)
	}
	if len(blocks) < 2 {
		t.Fatalf("%d runnable blocks in the README and docs/: the docs' examples are not run", len(blocks))
	}
	for _, b := range blocks {
		start := time.Now()
		if err := runDocBlock(t, b, 4*time.Minute); err != nil {
			t.Errorf("a runnable example fails: %v", err)
			continue
		}
		t.Logf("ran %s:%d (%d lines) in %.1fs", b.file, b.line, strings.Count(b.text, "\n"), time.Since(start).Seconds())
	}
}

// TestDocsRunnerFailsOnABrokenExample: the runner fails a block that
// exits non-zero, naming where it is and what it printed; blocks not
// marked runnable are not run.
func TestDocsRunnerFailsOnABrokenExample(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("each block runs in a network namespace of its own (unshare --net): needs root")
	}
	md := "# a doc\n\n```sh\nexit 1\n```\n\n```sh runnable\nbin/cpsweep --duration 2x\n```\n"
	blocks := runnableBlocks("docs/broken.md", []byte(md))
	if len(blocks) != 1 || blocks[0].line != 7 {
		t.Fatalf("blocks %+v, want the one marked runnable, at line 7", blocks)
	}
	err := runDocBlock(t, blocks[0], time.Minute)
	if err == nil || !strings.Contains(err.Error(), "docs/broken.md:7: exit status 4") || !strings.Contains(err.Error(), `invalid argument "2x"`) {
		t.Fatalf("a broken example: %v", err)
	}
}
