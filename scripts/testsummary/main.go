// Command testsummary reads `go test -json` on standard input and prints
// what a person needs from a test run: each package's ok/FAIL line, the
// full output of every failing test, every skipped test with its reason
// (so that nothing is skipped silently), and a closing count. It exits 1
// when anything failed or did not build.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	outputs := map[string]*strings.Builder{} // package/test -> output
	var passed, failed, skipped int
	var skips, failures []string
	failedPkgs := 0
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			fmt.Println(string(line)) // a build error or other plain output
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			b := outputs[key]
			if b == nil {
				b = &strings.Builder{}
				outputs[key] = b
			}
			b.WriteString(e.Output)
			if e.Test == "" && (strings.HasPrefix(e.Output, "ok ") || strings.HasPrefix(e.Output, "FAIL") || strings.HasPrefix(e.Output, "?")) {
				fmt.Print(e.Output)
			}
		case "pass":
			if e.Test != "" {
				passed++
			}
		case "fail":
			if e.Test != "" {
				failed++
				failures = append(failures, key)
			} else {
				failedPkgs++
			}
		case "skip":
			if e.Test != "" {
				skipped++
				skips = append(skips, key)
			}
		}
	}
	for _, k := range failures {
		fmt.Printf("\n--- FAIL: %s\n%s", k, outputs[k])
	}
	if len(skips) > 0 {
		sort.Strings(skips)
		fmt.Printf("\nskipped tests (%d):\n", len(skips))
		for _, k := range skips {
			reason := ""
			for _, l := range strings.Split(outputs[k].String(), "\n") {
				l = strings.TrimSpace(l)
				if l != "" && !strings.HasPrefix(l, "=== ") && !strings.HasPrefix(l, "--- SKIP") {
					reason = l
				}
			}
			fmt.Printf("  %s: %s\n", k, reason)
		}
	}
	fmt.Printf("\n%d passed, %d failed, %d skipped\n", passed, failed, skipped)
	if failed > 0 || failedPkgs > 0 {
		os.Exit(1)
	}
}
