package membudget

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// DefaultFraction is the share of the host's memory a run may plan to use
// when no budget is given.
const DefaultFraction = 0.5

// fallback is the budget where the host's memory is unknown.
const fallback = 4 << 30

// Default is half of the host's memory (MemTotal of /proc/meminfo), or
// 4 GiB where that cannot be read.
func Default() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return fallback
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil || kb <= 0 {
				break
			}
			return int64(float64(kb<<10) * DefaultFraction)
		}
	}
	return fallback
}
