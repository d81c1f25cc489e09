// Command coversummary reads a Go coverage profile written with
// -coverpkg (one block per test binary that ran it) and prints statement
// coverage per package: a statement counts as covered when any package's
// tests ran it. With -min P and -require pkg,... it exits 1 when a
// required package is below P percent.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
)

type block struct {
	stmts   int
	covered bool
}

func main() {
	module := flag.String("module", "github.com/cloudprofiler-go/cp/", "module prefix to strip from package names")
	minPct := flag.Float64("min", 0, "coverage every -require package must reach (percent)")
	require := flag.String("require", "", "comma-separated packages (without the module prefix) held to -min")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: coversummary [-min P -require pkg,...] cover.out")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "coversummary:", err)
		os.Exit(2)
	}
	defer f.Close()
	blocks, err := readProfile(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "coversummary:", err)
		os.Exit(2)
	}
	total, covered := map[string]int{}, map[string]int{}
	for loc, b := range blocks {
		file, _, _ := strings.Cut(loc, ":")
		pkg := strings.TrimPrefix(path.Dir(file), *module)
		total[pkg] += b.stmts
		if b.covered {
			covered[pkg] += b.stmts
		}
	}
	pkgs := make([]string, 0, len(total))
	for p := range total {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	pct := func(p string) float64 {
		if total[p] == 0 {
			return 100
		}
		return 100 * float64(covered[p]) / float64(total[p])
	}
	for _, p := range pkgs {
		fmt.Printf("%-24s %5.1f%%  (%d of %d statements)\n", p, pct(p), covered[p], total[p])
	}
	bad := false
	for _, p := range strings.Split(*require, ",") {
		if p == "" {
			continue
		}
		if _, ok := total[p]; !ok {
			fmt.Printf("%s: not in the profile\n", p)
			bad = true
		} else if pct(p) < *minPct {
			fmt.Printf("%s: %.1f%% is below the required %.0f%%\n", p, pct(p), *minPct)
			bad = true
		}
	}
	if bad {
		os.Exit(1)
	}
}

// readProfile reads a coverage profile's blocks, merged over the test
// binaries that ran them.
func readProfile(f *os.File) (map[string]*block, error) {
	blocks := map[string]*block{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "mode:") || line == "" {
			continue
		}
		// file.go:l.c,l.c stmts count
		fields := strings.Fields(line)
		if len(fields) != 3 {
			return nil, fmt.Errorf("malformed line %q", line)
		}
		n, err1 := strconv.Atoi(fields[1])
		c, err2 := strconv.Atoi(fields[2])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("malformed line %q", line)
		}
		b := blocks[fields[0]]
		if b == nil {
			b = &block{stmts: n}
			blocks[fields[0]] = b
		}
		b.covered = b.covered || c > 0
	}
	return blocks, sc.Err()
}
