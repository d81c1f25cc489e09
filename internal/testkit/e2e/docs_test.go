package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/sweep"
)

// Every flag a binary or a cpsweep subcommand takes is documented: its
// --help lists it, and docs/ or the README names it (docs/flags.md for
// dgsend and dgrecv, docs/sweep.md for cpsweep, the subject's document for
// a subcommand). A flag added without a word in the docs fails here.
func TestEveryFlagIsDocumented(t *testing.T) {
	text := docsText(t, true)
	// Every command, subcommands found from "Available Commands:".
	commands := [][]string{{"dgsend"}, {"dgrecv"}, {"cpsweep"}}
	flagLine := regexp.MustCompile(`^\s+(?:-([a-zA-Z]), )?--([a-z0-9][a-z0-9-]*)`)
	subLine := regexp.MustCompile(`^  ([a-z][a-z0-9-]*)\s`)
	checked := 0
	for len(commands) > 0 {
		c := commands[0]
		commands = commands[1:]
		out, err := exec.Command(filepath.Join(binDir, c[0]), append(c[1:], "--help")...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s --help: %v\n%s", strings.Join(c, " "), err, out)
		}
		help := string(out)
		if i := strings.Index(help, "\nAvailable Commands:\n"); i >= 0 {
			for _, line := range strings.Split(help[i+len("\nAvailable Commands:\n"):], "\n") {
				m := subLine.FindStringSubmatch(line)
				if m == nil {
					break
				}
				if m[1] != "help" && m[1] != "completion" {
					commands = append(commands, append(append([]string(nil), c...), m[1]))
				}
			}
		}
		// The command's own flags: between "Flags:" and "Global Flags:" (or
		// the end) in cobra's layout.
		if i := strings.Index(help, "\nFlags:\n"); i >= 0 {
			help = help[i:]
		}
		if i := strings.Index(help, "\nGlobal Flags:"); i >= 0 {
			help = help[:i]
		}
		for _, line := range strings.Split(help, "\n") {
			m := flagLine.FindStringSubmatch(line)
			if m == nil || m[2] == "help" {
				continue
			}
			long := regexp.MustCompile(`--` + regexp.QuoteMeta(m[2]) + `(?:[^a-z0-9-]|$)`)
			short := m[1] != "" && strings.Contains(text, "`-"+m[1]+" ")
			if !long.MatchString(text) && !short {
				t.Errorf("%s: --%s is in --help but in no document (docs/*.md, README.md)", strings.Join(c, " "), m[2])
			}
		}
		if !strings.Contains(help, "-h, --help") {
			t.Errorf("%s --help: no flag list found; the layout changed?\n%s", strings.Join(c, " "), out)
		}
		checked++
	}
	if checked < 12 {
		t.Errorf("checked %d commands; want dgsend, dgrecv, cpsweep and its subcommands", checked)
	}
}

// Every field dgsend and dgrecv print with --json is named in the docs
// (docs/json.md, and the documents it points to for service rates and
// stages): a field added to a result without a word fails here.
func TestEveryJSONFieldIsDocumented(t *testing.T) {
	pr := &Pair{Bin: binDir, SendArgs: []string{"--rate", "200k", "--bucket", "10", "--count", "100000", "--stage-period", "50ms"}}
	pr.Run(t)
	checkFieldsDocumented(t, "dgsend --json", pr.SendProc.Stdout.Bytes(), 50)
	checkFieldsDocumented(t, "dgrecv --json", pr.RecvProc.Stdout.Bytes(), 50)
}

// checkFieldsDocumented fails for every field of the JSON document that
// no file of docs/ names (as `field`, or inside a {a, b, ...} list);
// keys that are data (numbers, node/stage names) are not fields. A
// document with fewer than min fields is not the one meant.
func checkFieldsDocumented(t *testing.T, what string, doc []byte, min int) {
	t.Helper()
	text := docsText(t, false)
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	keys := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				keys[k] = true
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	if len(keys) < min {
		t.Fatalf("%s: only %d fields", what, len(keys))
	}
	for k := range keys {
		if _, err := strconv.Atoi(k); err == nil || strings.Contains(k, "/") {
			continue
		}
		if !strings.Contains(text, "`"+k+"`") && !regexp.MustCompile(`[{(,] ?`+regexp.QuoteMeta(k)+`\b`).MatchString(text) {
			t.Errorf("%s: field %q is in no document (docs/*.md)", what, k)
		}
	}
}

// docsText is every file of docs/ (and the README when readme is set),
// one after the other.
func docsText(t *testing.T, readme bool) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md under %s: %v", root, err)
	}
	if readme {
		files = append(files, filepath.Join(root, "README.md"))
	}
	var docs strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
		docs.WriteByte('\n')
	}
	return docs.String()
}

// TestReadmeIsForTheFirstTenMinutes: the README stays short (at most 250
// lines), links only inside the repository, names every exit status of
// cpsweep, and quotes make demo's output within one screen (at most 40
// lines after the build) ending with the answer's lines and the report.
func TestReadmeIsForTheFirstTenMinutes(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if n := strings.Count(text, "\n"); n > 250 {
		t.Errorf("the README is %d lines: at most 250 (move reference material to docs/)", n)
	}
	for _, m := range regexp.MustCompile(`\]\(([^)#]+)`).FindAllStringSubmatch(text, -1) {
		link := m[1]
		if strings.Contains(link, "://") {
			continue
		}
		if strings.HasPrefix(link, "..") || filepath.IsAbs(link) {
			t.Errorf("the README links %s, outside the repository", link)
			continue
		}
		if _, err := os.Stat(filepath.Join(root, link)); err != nil {
			t.Errorf("the README links %s: %v", link, err)
		}
	}
	for _, code := range []int{sweep.ExitAnswer, sweep.ExitNoRatePassed, sweep.ExitInvalidPlan, sweep.ExitAgentFailure, sweep.ExitContradicted,
		sweep.ExitDisturbed, sweep.ExitSystemFailed, sweep.ExitShort, sweep.ExitWrongOutput, sweep.ExitInterrupted, sweep.ExitError} {
		if !regexp.MustCompile(fmt.Sprintf(`\b%d\b [a-z]`, code)).MatchString(text[strings.Index(text, "Exit status"):]) {
			t.Errorf("the README's exit statuses lack %d", code)
		}
	}
	_, quote, ok := strings.Cut(text, "```\n$ make demo\n")
	quote, _, _ = strings.Cut(quote, "```")
	lines := strings.Split(strings.TrimSpace(quote), "\n")
	if !ok || len(lines) > 41 { // the build's line, then at most 40
		t.Fatalf("the README's make demo quote is %d lines (ok %v): at most 40 after the build", len(lines), ok)
	}
	tail := strings.Join(lines[len(lines)-9:], "\n") // the answer (two lines) to the report
	for _, want := range []string{"max sustainable throughput: ", "latency at ", "limited by: ", "results: runs/", "wrote runs/"} {
		if !strings.Contains(tail, want) {
			t.Errorf("the quote's end lacks %q:\n%s", want, tail)
		}
	}
}
