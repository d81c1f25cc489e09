package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/limits"

	"github.com/cloudprofiler-go/cp/analysis"
	"github.com/cloudprofiler-go/cp/internal/atomicfile"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/rundir"
)

// page is what the template renders.
type page struct {
	// damaged: the missing or damaged parts met (not rendered as such:
	// Problems lists them with the rest).
	damaged                               []string
	Name, Dir, Started, Topology, Verdict string
	Trials                                []trialRow
	Figures                               []Figure
	Pairs                                 []pairRow
	Clock                                 []clockRow
	ReT                                   []analysis.ReTResult
	Problems                              []string
	Config                                string
	Generated                             string
	Analysis                              *analysis.Report
	// History compares the answer with the earlier sweeps of its plan
	// (summary.json history), as the sweep printed it.
	History string
	// Latency is the latency at the answer and Limit what limited it, as
	// the sweep printed them ("": none).
	Latency, Limit string
	// Hgrm are the .hgrm files of the latency at the answer that Write
	// puts beside the page.
	Hgrm []string
	// NoLatency says why there is no latency section, and how to get one.
	NoLatency string
	// Diagnosis is the label timelines of the trials worth showing.
	Diagnosis []diagnosisSection
	// Rates compares the stages' service-rate estimates with the answer.
	Rates *rateSection
	// PAG is the program activity graph (pag.json), when analysed.
	PAG *pagSection
}

type trialRow struct {
	N                                   int
	Purpose, Target, Achieved, Verdict  string
	Pass                                bool
	LatenessP99, LatencyP50, LatencyP99 string
	LatencyP999, LatencyMax             string
	// Failed is what failed in a line (the rules, and what limited the
	// trial), FailedDetail every rule's numbers and the limit's evidence,
	// behind a click: a cell shows at most three lines.
	Failed, FailedDetail string
	// Host is the busiest host's shares, HostDetail per agent the cores it
	// used and the host's busy, stolen and other processes' shares.
	Host, HostDetail string
}

type pairRow struct {
	Pair, Group                   string
	Count                         uint64
	Min, P50, P90, P99, P999, Max string
	// Each percentile's histogram rounding: the true one lies within it
	// below the value shown.
	R50, R90, R99, R999 string
	ErrP50, ErrMax      string
	OnlyFrom, OnlyTo    uint64
}

type clockRow struct {
	Node, Paper, Tighter, ReT, NTP string
}

// Build renders the report of a run directory. It uses analysis.json when
// present, and analyses the profiles itself otherwise. damaged lists the
// missing or damaged parts it met (the page lists them too): the same
// policy as cpsweep analyze, which refuses such a directory unless asked
// for what is intact.
func Build(d *rundir.Dir) (html []byte, damaged []string, err error) {
	html, damaged, _, err = build(d)
	return html, damaged, err
}

// build is Build, and the latency distributions at the answer it drew
// (which Write also saves as .hgrm).
func build(d *rundir.Dir) (html []byte, damaged []string, dists []answerDist, err error) {
	pg := page{Dir: d.Path, Generated: time.Now().UTC().Format(time.RFC3339), Problems: append([]string(nil), d.Problems...)}
	pg.damaged = append(pg.damaged, d.Problems...)
	if s := d.Summary; s != nil {
		pg.Name, pg.Started, pg.Topology = s.Name, s.Started.Format(time.RFC3339), s.Topology
		pg.Verdict = verdict(s)
		if s.Latency != nil {
			pg.Latency = s.Latency.Statement()
		}
		if s.Result.FirstFail > 0 && s.LimitingStage != "" {
			pg.Limit = limits.Line(s.LimitingStage, s.LimitingEvidence)
		}
		if s.History != nil {
			pg.History = s.History.Statement
		}
		pg.Trials = trialRows(d)
		if f, err := sweepFigure(s); err == nil {
			pg.Figures = append(pg.Figures, f)
		} else {
			pg.Problems = append(pg.Problems, "sweep plot: "+err.Error())
		}
		pg.Figures = append(pg.Figures, trialFigures(d, s)...)
		if f, ok := cpuFigure(s); ok {
			pg.Figures = append(pg.Figures, f)
		}
		if f, ok := sweepThroughputFigure(d, s); ok {
			pg.Figures = append(pg.Figures, f)
		}
		dists = answerDists(d, &pg.Problems)
		if f, ok := distributionFigure(dists); ok {
			pg.Figures = append(pg.Figures, f)
			for _, a := range dists {
				pg.Hgrm = append(pg.Hgrm, a.File())
			}
		}
	}
	pg.Diagnosis = diagnosisSections(d)
	pg.Rates = rateSectionOf(d)
	pg.PAG = pagSectionOf(d, &pg)
	an := loadAnalysis(d, &pg)
	if an != nil {
		pg.Analysis = an
		pg.Pairs = pairRows(an)
		pg.ReT = an.ReT
		pg.Figures = append(pg.Figures, pairFigures(an)...)
		if f, ok := throughputFigure(an); ok {
			pg.Figures = append(pg.Figures, f)
		}
	}
	if an == nil || len(pg.Pairs) == 0 {
		pg.NoLatency = noLatency(d)
	}
	if d.Relation != nil {
		pg.Clock = clockRows(d, an)
		if f, ok := clockFigure(d, an); ok {
			pg.Figures = append(pg.Figures, f)
		}
	}
	if cfg := d.Config(); cfg != nil {
		var v any
		_ = json.Unmarshal(cfg, &v)
		b, _ := json.MarshalIndent(v, "", "  ")
		pg.Config = string(b)
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, pg); err != nil {
		return nil, nil, nil, fmt.Errorf("render report: %w", err)
	}
	slices.Sort(pg.damaged)
	return buf.Bytes(), slices.Compact(pg.damaged), dists, nil
}

// noLatency explains a run without per-tuple latencies.
func noLatency(d *rundir.Dir) string {
	const how = "run cpsweep with --clock --profile profiles/default.yaml: after the search, one trial logs every tuple at every point, and this section shows where its time goes"
	if s := d.Summary; s != nil && s.ProfileSkipped != "" {
		return "The profiled trial was asked for but skipped: " + s.ProfileSkipped + ". Once a rate passes, " + how + "."
	}
	if len(d.Nodes) > 0 {
		return "The profiles of this run could not be joined (see Problems above)."
	}
	return "This run has no profiled trial. To see per-tuple latency across nodes with error bounds, " + how + "."
}

// Write renders the report into the run directory and returns its path.
// A directory with missing or damaged parts is refused (an error listing
// them, nothing written) unless partial is set.
func Write(d *rundir.Dir, partial bool) (string, []string, error) {
	b, damaged, dists, err := build(d)
	if err != nil {
		return "", damaged, err
	}
	if len(damaged) > 0 && !partial {
		return "", damaged, &DamagedError{Count: len(damaged)}
	}
	if err := writeHgrms(d.Path, dists); err != nil {
		return "", damaged, err
	}
	path := rundir.Path(d.Path, rundir.ReportFile)
	return path, damaged, atomicfile.Write(path, b, 0o644)
}

// DamagedError is a report refused because parts of its run directory are
// missing or damaged.
type DamagedError struct{ Count int }

func (e *DamagedError) Error() string {
	return fmt.Sprintf("the run directory has %d missing or damaged part(s) (listed above): pass --partial to render what is intact", e.Count)
}

func loadAnalysis(d *rundir.Dir, pg *page) *analysis.Report {
	if b, err := d.ReadFile(rundir.AnalysisFile, rundir.MaxJSONFile); err == nil {
		var an analysis.Report
		if err := json.Unmarshal(b, &an); err == nil {
			pg.damaged = append(pg.damaged, an.Damaged...) // analysed with --partial
			return &an
		}
		pg.Problems = append(pg.Problems, rundir.AnalysisFile+" is damaged: analysing the profiles again")
		pg.damaged = append(pg.damaged, rundir.AnalysisFile+" is damaged")
	}
	if len(d.Nodes) == 0 {
		return nil
	}
	an, err := analysis.Analyze(d, analysis.Options{})
	if err != nil {
		pg.Problems = append(pg.Problems, "analysis: "+err.Error())
		pg.damaged = append(pg.damaged, "analysis: "+err.Error())
		return nil
	}
	pg.Problems = append(pg.Problems, an.Problems...)
	pg.damaged = append(pg.damaged, an.Damaged...)
	return an
}

func verdict(s *rundir.Summary) string {
	if s.Contradicted != "" {
		plain := *s
		plain.Contradicted = ""
		return "NOT TRUSTWORTHY: " + s.Contradicted + " (the trials gave " + verdict(&plain) + ")"
	}
	r := s.Result
	switch {
	case r.Boundary != nil && r.Boundary.Statement != "":
		return r.Boundary.Statement // as the sweep printed it: one statement of the answer
	case r.LastPass == 0:
		return "no rate passed"
	case r.FirstFail == 0:
		return fmt.Sprintf("at least %s (nothing failed)", numfmt.Rate(r.LastPass))
	}
	lo, hi := numfmt.RateInterval(r.LastPass, r.FirstFail)
	return fmt.Sprintf("between %s (passed) and %s (failed), ±%.1f%%", lo, hi, 50*(r.FirstFail-r.LastPass)/r.LastPass)
}

func dur(ns int64) string { return numfmt.Ns(float64(ns)) }

func trialRows(d *rundir.Dir) []trialRow {
	var rows []trialRow
	for _, t := range d.Summary.Result.Trials {
		r := trialRow{N: t.N, Purpose: t.Purpose, Target: numfmt.Rate(t.Rate), Achieved: numfmt.Rate(t.Achieved), Pass: t.Verdict.Pass, Verdict: "fail"}
		if t.Verdict.Pass {
			r.Verdict = "pass"
		}
		if r.Failed = t.FailedLine(); r.Failed != "" {
			r.FailedDetail = strings.Join(t.Verdict.Failed(), "; ")
			if l := limits.Line(t.LimitingStage, t.LimitingEvidence); l != "" && t.LimitingStage != "none" {
				r.FailedDetail += "; " + l
			}
		}
		// as the sweep's progress said it (-v); shown: how busy the first
		// host was ("vm busy 59% of 2 CPUs"), the rest on a click
		r.HostDetail = cpustat.HostsLine(t.Hosts)
		r.Host, _, _ = strings.Cut(r.HostDetail, ",")
		r.Host, _, _ = strings.Cut(r.Host, ";")
		if o, err := d.Trial(t.N); err == nil && o.Outcome != nil {
			// The worst agent's of each figure, as trials.csv has them.
			if late, ok := o.Outcome.WorstLateness(); ok && late.P99 > 0 {
				r.LatenessP99 = dur(late.P99)
			}
			if lat, ok := o.Outcome.WorstLatency(); ok && lat.Max > 0 {
				r.LatencyP50, r.LatencyP99, r.LatencyP999, r.LatencyMax = dur(lat.P50), dur(lat.P99), dur(lat.P999), dur(lat.Max)
			}
		}
		rows = append(rows, r)
	}
	return rows
}

func pairRows(an *analysis.Report) []pairRow {
	var rows []pairRow
	for _, p := range an.Pairs {
		for _, g := range p.Groups {
			l, e := g.Latency, g.Error
			r := l.Rounding
			rows = append(rows, pairRow{Pair: p.From + " → " + p.To, Group: g.Name, Count: l.Count, Min: dur(l.Min), P50: dur(l.P50), P90: dur(l.P90),
				P99: dur(l.P99), P999: dur(l.P999), Max: dur(l.Max), R50: dur(r.P50), R90: dur(r.P90), R99: dur(r.P99), R999: dur(r.P999),
				ErrP50: dur(e.P50), ErrMax: dur(e.Max), OnlyFrom: p.OnlyFrom, OnlyTo: p.OnlyTo})
		}
	}
	return rows
}

func clockRows(d *rundir.Dir, an *analysis.Report) []clockRow {
	var rows []clockRow
	for _, r := range d.Relation.Relations {
		c := r.Compare
		if c == nil {
			continue
		}
		ntp := fmt.Sprintf("±%s (est. %s)", dur(int64(c.NTPMaxNs)), dur(int64(c.NTPEstNs)))
		if !c.NTPSynced {
			ntp += ", not synchronised"
		}
		rows = append(rows, clockRow{Node: r.Node + " → " + r.Reference, Paper: "±" + dur(int64(c.PaperNs)), Tighter: "±" + dur(int64(c.TighterNs)),
			ReT: fmt.Sprintf("%s / %s / %s", dur(int64(c.ReTMinNs)), dur(int64(c.ReTMedianNs)), dur(int64(c.ReTMaxNs))), NTP: ntp})
	}
	return rows
}
