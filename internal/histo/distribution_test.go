package histo

import (
	"bufio"
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDistributionAsHgrm: the distribution of 1..10000 ns rises to its
// maximum at 100%, passes its own check, and prints as HdrHistogram's
// .hgrm: a header, one line of four numbers per bracket, the footer.
func TestDistributionAsHgrm(t *testing.T) {
	p := NewPrecise()
	for v := int64(1); v <= 10000; v++ {
		p.Record(v * 1000)
	}
	d := p.Distribution()
	if d == nil || d.Count != 10000 || d.MaxNs != 10_000_000 || len(d.Brackets) < 20 {
		t.Fatalf("distribution %+v", d)
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	last := d.Brackets[len(d.Brackets)-1]
	if last.Percentile != 100 || last.ValueNs != d.MaxNs || last.Count != d.Count {
		t.Fatalf("last bracket %+v", last)
	}
	var b bytes.Buffer
	if err := d.WriteHgrm(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	sc := bufio.NewScanner(strings.NewReader(text))
	lines, rows := 0, 0
	for sc.Scan() {
		lines++
		f := strings.Fields(sc.Text())
		if len(f) != 4 || lines < 3 {
			continue
		}
		if _, err := strconv.ParseFloat(f[0], 64); err != nil {
			t.Fatalf("line %d: %q", lines, sc.Text())
		}
		rows++
	}
	if rows != len(d.Brackets) || !regexp.MustCompile(`Total count += +10000\]`).MatchString(text) {
		t.Fatalf("%d rows for %d brackets:\n%s", rows, len(d.Brackets), text)
	}
	if NewPrecise().Distribution() != nil {
		t.Fatal("an empty histogram has a distribution")
	}
}

// TestDistributionCheck refuses what a hostile agent could send.
func TestDistributionCheck(t *testing.T) {
	for _, d := range []Distribution{
		{},
		{Brackets: make([]Bracket, MaxBrackets+1)},
		{Brackets: []Bracket{{50, 10, 5}, {40, 20, 6}}},
		{Brackets: []Bracket{{50, 10, 5}, {60, 5, 6}}},
		{Brackets: []Bracket{{50, 10, 5}, {101, 20, 6}}},
	} {
		if d.Check() == nil {
			t.Errorf("accepted %+v", d.Brackets[:min(len(d.Brackets), 3)])
		}
	}
}
