package cref

import (
	"bufio"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

//go:embed src/send.c src/recv.c
var sources embed.FS

// Programs are the compiled reference sender and receiver.
type Programs struct {
	SendBin, RecvBin string
}

// Build compiles both programs into dir with $CC (default cc) at -O2,
// linked against libzmq.
func Build(dir string) (Programs, error) {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	p := Programs{SendBin: filepath.Join(dir, "cref-send"), RecvBin: filepath.Join(dir, "cref-recv")}
	for _, prog := range []struct{ src, out string }{{"send.c", p.SendBin}, {"recv.c", p.RecvBin}} {
		code, err := sources.ReadFile("src/" + prog.src)
		if err != nil {
			return Programs{}, fmt.Errorf("read embedded %s: %w", prog.src, err)
		}
		src := filepath.Join(dir, prog.src)
		if err := os.WriteFile(src, code, 0o644); err != nil {
			return Programs{}, fmt.Errorf("write %s: %w", src, err)
		}
		cmd := exec.Command(cc, "-O2", "-Wall", "-o", prog.out, src, "-lzmq")
		if out, err := cmd.CombinedOutput(); err != nil {
			return Programs{}, fmt.Errorf("compile %s with %s (is libzmq3-dev installed?): %w\n%s", prog.src, cc, err, out)
		}
	}
	return p, nil
}

// Result is what a reference program printed.
type Result struct {
	Messages      int64   `json:"messages"`
	OtherMessages int64   `json:"other_messages"` // receiver: messages of another size (an end marker)
	Seconds       float64 `json:"seconds"`
	Rate          float64 `json:"messages_per_s"`
	CPUPerMessage float64 `json:"thread_cpu_ns_per_message"` // sender: its thread's CPU time per message
	// ProcessCPU is the process's user and system CPU time over its life
	// (seconds, from the exit status: every thread, libzmq's too).
	ProcessCPU float64 `json:"-"`
}

// processCPU is an exited command's user plus system time in seconds.
func processCPU(cmd *exec.Cmd) float64 {
	if cmd.ProcessState == nil {
		return 0
	}
	return (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
}

// Receiver is a running cref-recv.
type Receiver struct {
	Endpoint string
	cmd      *exec.Cmd
	out      strings.Builder
}

// Receive starts the reference receiver on a free loopback port; it ends
// after count messages of exactly size bytes, or idle after the first.
func (p Programs) Receive(ctx context.Context, size, count int, idle time.Duration) (*Receiver, error) {
	r := &Receiver{cmd: exec.CommandContext(ctx, p.RecvBin, "tcp://127.0.0.1:*", strconv.Itoa(size), strconv.Itoa(count),
		strconv.FormatInt(max(idle.Milliseconds(), 1), 10))}
	r.cmd.Stdout = &r.out
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", p.RecvBin, err)
	}
	line, err := bufio.NewReader(stderr).ReadString('\n')
	ep, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		return nil, fmt.Errorf("cref-recv did not say where it listens: %q (%v)", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	r.Endpoint = ep
	return r, nil
}

// Wait returns the receiver's result once it has exited.
func (r *Receiver) Wait() (Result, error) {
	err := r.cmd.Wait()
	res := Result{ProcessCPU: processCPU(r.cmd)}
	if jerr := json.Unmarshal([]byte(r.out.String()), &res); jerr != nil {
		return res, errors.Join(fmt.Errorf("cref-recv printed %q: %w", r.out.String(), jerr), err)
	}
	if err != nil {
		return res, fmt.Errorf("cref-recv (got %d messages): %w", res.Messages, err)
	}
	return res, nil
}

// Send runs the reference sender to endpoint, unpaced, and returns its
// result.
func (p Programs) Send(ctx context.Context, endpoint string, size, count int) (Result, error) {
	return p.SendAt(ctx, endpoint, size, count, 0)
}

// SendAt runs the reference sender at rate messages per second (0:
// unpaced) and returns its result.
func (p Programs) SendAt(ctx context.Context, endpoint string, size, count int, rate float64) (Result, error) {
	args := []string{endpoint, strconv.Itoa(size), strconv.Itoa(count)}
	if rate > 0 {
		args = append(args, strconv.FormatFloat(rate, 'f', 1, 64))
	}
	cmd := exec.CommandContext(ctx, p.SendBin, args...)
	out, err := cmd.Output()
	res := Result{ProcessCPU: processCPU(cmd)}
	if err != nil {
		return res, fmt.Errorf("cref-send: %w", err)
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return res, fmt.Errorf("cref-send printed %q: %w", out, err)
	}
	return res, nil
}
