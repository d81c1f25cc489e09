package limits

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/stage"
)

// Three analyses explain a limit, each from its own evidence: the stage
// diagnosis (the first failing trial above the answer: which stage was
// busy with work waiting), the service rates (the trials at the answer
// and at the first failing rate: which stage would saturate first) and the activity graph (the profiled
// trial: what the system's own progress waited on). Agreement puts them
// side by side once, for the text, pag.json and the report alike.

// Explanation is one analysis's answer to what limits the run.
type Explanation struct {
	Analysis string `json:"analysis"` // "diagnosis", "service rates", "activity graph"
	Stage    string `json:"stage"`    // as the analysis names it ("": it named none)
	Detail   string `json:"detail,omitempty"`
	// Trial is the trial the analysis read, said for a reader ("the first
	// failing rate above the answer").
	Trial string `json:"trial,omitempty"`
	// AboveAnswer: that trial ran above the answer (an overloaded run).
	AboveAnswer bool `json:"above_answer,omitempty"`
	// Note is the one fact of Detail the comparison line repeats beside
	// the stage ("its thread waited runnable 17% of the profiled trial":
	// how much of a graph's top activity a CPU it did not get may be).
	Note string `json:"note,omitempty"`
	// Operators, when Stage is a thread that operators share, are those
	// operators: an analysis that names one of them names what runs on
	// that thread, and agrees with it.
	Operators []string `json:"operators,omitempty"`
	// Tied are the stages the analysis found tied with Stage (service
	// rates within their own spreads): any of them is its answer too.
	Tied []string `json:"tied,omitempty"`
}

// Agreement is whether the analyses name the same stage.
type Agreement struct {
	Explanations []Explanation `json:"explanations"`
	// Agree: every analysis that named a stage named the same one (by
	// role: consumer, lane, sender thread, transport, host CPU), or an
	// operator on the thread another named, and at least two did.
	Agree bool `json:"agree"`
	// Statement says so, and when they disagree names each answer and
	// what the difference means.
	Statement string `json:"statement"`
	// Short says it for the default console, in at most two lines: who
	// says what and, when they disagree, which one to trust where (the
	// reasons are Statement's, behind -v and in the report).
	Short string `json:"short"`
}

// role is what a stage name means across the analyses' spellings:
// "receiver0/consumer" and "consumer" are the consumer, "thread0" and
// "sender0/thread0" the sender's emission thread, "stream0" the transport,
// and a stream under another name than an agent's ("sut/stream0",
// "receiver0/nats/stream0") the system under test; a job's operator is
// itself under any spelling ("ysb/join", "job0/op.join", "ysb/join.1").
func role(name string) string {
	s := strings.ToLower(strings.TrimSpace(name))
	switch s {
	case "", "none":
		return ""
	case "host cpu":
		return "host CPU"
	case strings.ToLower(GoGC), strings.ToLower(RuntimeGC):
		return "garbage collection"
	}
	if kind, ok := diagnose.BlackBox(s); ok {
		if kind == stage.SUT {
			return "system under test"
		}
		return "transport"
	}
	if i := strings.LastIndex(s, "/"); i >= 0 {
		s = s[i+1:]
	}
	if op, ok := strings.CutPrefix(s, "op."); ok { // a job's operator as the graph names it (job0/op.join)
		s = op
	}
	if i := strings.LastIndexByte(s, '.'); i > 0 && strings.TrimLeftFunc(s[i+1:], unicode.IsDigit) == "" {
		s = s[:i] // a copy of an operator (join.1) is the operator
	}
	s = strings.TrimSpace(strings.TrimRightFunc(s, unicode.IsDigit)) // pipeline thread 1 is pipeline thread
	switch s {
	case "thread":
		return "sender thread"
	case "stream", "zmq-io":
		return "transport"
	}
	return s
}

// roles are what an explanation names: its stage's role, and the roles
// of the operators on the thread it names.
func (e Explanation) roles() []string {
	r := role(e.Stage)
	if r == "" {
		return nil
	}
	out := []string{r}
	for _, op := range slices.Concat(e.Operators, e.Tied) {
		if o := role(op); o != "" && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

// common is the role every named explanation names (its own, or one on
// the thread it names), the first analysis's own first ("": none).
func common(named []Explanation) string {
	for _, e := range named {
		r := role(e.Stage)
		all := true
		for _, o := range named {
			all = all && slices.Contains(o.roles(), r)
		}
		if all {
			return r
		}
	}
	return ""
}

// onThread says the agreed role with the thread it runs on, when an
// analysis named that thread: "pipeline thread, filter on it".
func onThread(named []Explanation, agreed string) string {
	for _, e := range named {
		if r := role(e.Stage); r != agreed && slices.ContainsFunc(e.Operators, func(op string) bool { return role(op) == agreed }) {
			return fmt.Sprintf("%s, %s on it", r, agreed)
		}
	}
	for _, e := range named {
		if len(e.Tied) > 0 {
			var tied []string
			for _, st := range append([]string{e.Stage}, e.Tied...) {
				if r := role(st); r != agreed {
					tied = append(tied, r)
				}
			}
			return fmt.Sprintf("%s, tied with %s by the %s", agreed, strings.Join(tied, ", "), e.Analysis)
		}
	}
	return agreed
}

// Agree compares the explanations.
func Agree(ex []Explanation) Agreement {
	a := Agreement{Explanations: ex}
	var named []Explanation
	roles := map[string]bool{}
	for _, e := range ex {
		if r := role(e.Stage); r != "" {
			named = append(named, e)
			roles[r] = true
		}
	}
	agreed := common(named)
	var each []string
	for _, e := range ex {
		s := e.Stage
		if role(s) == "" {
			s = "no stage"
		}
		if e.Note != "" {
			s += " (" + e.Note + ")"
		}
		each = append(each, fmt.Sprintf("%s: %s", e.Analysis, s))
	}
	switch {
	case len(named) < 2:
		a.Statement = "fewer than two analyses named a stage (" + strings.Join(each, "; ") + "): nothing to compare"
		a.Short = "fewer than two analyses named a stage: nothing to compare"
	case agreed != "":
		a.Agree = true
		who, silent := "the analyses agree", ""
		if len(named) < len(ex) {
			// one named no stage: that is not agreement, and the console
			// must not read as if all three had said it
			var none []string
			for _, e := range ex {
				if role(e.Stage) == "" {
					none = append(none, "the "+e.Analysis)
				}
			}
			who = fmt.Sprintf("%d of %d analyses agree", len(named), len(ex))
			silent = fmt.Sprintf(" (%s named no stage)", strings.Join(none, " and "))
		}
		a.Statement = fmt.Sprintf("%s: %s (%s)", who, onThread(named, agreed), strings.Join(each, "; "))
		a.Short = who + ": " + onThread(named, agreed) + silent
	default:
		a.Statement = "the analyses DISAGREE: " + strings.Join(each, "; ") + ". " + disagreement(roles, ex)
		a.Short = "the analyses disagree: " + shortEach(ex) + "\n" + trust(ex)
	}
	return a
}

// shortEach names each analysis's stage, without its notes.
func shortEach(ex []Explanation) string {
	var each []string
	for _, e := range ex {
		s := e.Stage
		if role(s) == "" {
			s = "no stage"
		}
		each = append(each, e.Analysis+" "+s)
	}
	return strings.Join(each, ", ")
}

// trust says which analysis to trust where the analyses disagree: the
// diagnosis, which reads the failing trial itself, at its rate; why they
// differ is the long statement's.
func trust(ex []Explanation) string {
	for _, e := range ex {
		if e.Analysis == "diagnosis" && role(e.Stage) != "" {
			where := ""
			if e.Trial != "" {
				where = ", " + e.Trial
			}
			return fmt.Sprintf("trust the diagnosis (%s%s); why they differ: the report, or -v", e.Stage, where)
		}
	}
	return "why they differ: the report, or -v"
}

// disagreement says what a disagreement between these roles most often
// means, so that a user does not optimise the wrong stage.
func disagreement(roles map[string]bool, ex []Explanation) string {
	var why []string
	if roles["host CPU"] {
		why = append(why, "a host CPU limit shows in the graph only as its threads' wait for a CPU on the critical paths (cpu-wait, from their host accounting): where an activity outweighs that wait, the graph names the activity whose thread the missing CPU stretched, and a service rate that did not give way to the host names the stage it measured, so the host's cores are the limit, not that thread")
	}
	if roles["garbage collection"] {
		why = append(why, "a job's garbage collector runs in its operators' threads (a Go job's assists) and beside them (its workers): the service rates see it only as operators slower than they would be, and the graph as their busy time, so an operator they name is one the collector slowed, not the limit")
	}
	if roles["transport"] {
		why = append(why, "the transport's I/O threads log no activities: the diagnosis sees them by their queue, the service rates only by what they delivered while backlogged (at or above their capacity), the graph only as messages in flight")
	}
	if roles["system under test"] || slices.ContainsFunc(ex, func(e Explanation) bool { return diagnose.IsBroker(e.Stage) }) {
		why = append(why, "the system under test is a black box: the service rates see it only by what it delivered while backlogged (at or above its capacity), and the graph only as messages in flight to a receiver that waited for them; the harness's stages around it are its victims, not its limit")
	}
	var trials []string
	distinct := map[string]bool{}
	graphBelow := false
	for _, e := range ex {
		if e.Trial != "" {
			trials = append(trials, e.Analysis+" "+e.Trial)
			distinct[e.Trial] = true
		}
		if e.Analysis == "activity graph" && e.Trial != "" && !e.AboveAnswer {
			graphBelow = true
		}
	}
	if len(distinct) > 1 {
		why = append(why, "they look at different trials ("+strings.Join(trials, ", ")+"), so a limit that moves with the rate, or a host that was busier in one of them, splits them; trust the diagnosis at the failing rate")
	}
	if graphBelow {
		why = append(why, "below the answer the graph's paths run through whatever every tuple crosses; profile at the limit (--profile-at limit) to see the graph of the overloaded run")
	}
	return strings.Join(why, "; ")
}
