package servicerate

import (
	"math"
	"sort"
)

// RaftLib's heuristic (Beard et al., ../shared/reference/raftlib-service-rate.txt,
// §IV-B, Algorithm 1): the rates of the non-blocking periods form a sliding
// window S of w values; S is smoothed by a Gaussian filter of radius 2
// (Equation 2) into S′; the 95th percentile of S′ under a normal fit,
// q = µS′ + 1.64485·σS′ (Equation 3), estimates the largest well-behaved
// rate; the running mean q̄ of successive q is the estimate, judged
// converged when the error of q̄, filtered by the Laplacian of Gaussian of
// Equation 4, stays within a tolerance over 16 values; then it is output
// and the statistics restart (Figure 10: a new phase gives new estimates).
//
// Two departures, both for this harness's periods and said where made:
// S holds rates (tuples/s) rather than RaftLib's counts per T, because a
// period here closes at a bucket boundary and T adapts, so the counts of
// two periods are comparable only per second; and the convergence test
// reads the relative standard error of q̄ (σ_q/√n/q̄) against a relative
// tolerance, because the paper's absolute 5×10⁻⁷ is for counts of
// microsecond periods.

// Params are the estimator's constants.
type Params struct {
	// Window is w, the length of S (non-blocking periods).
	Window int
	// Tolerance bounds the filtered error of q̄ (relative) over the last
	// ConvergeWindow values for convergence.
	Tolerance float64
	// ConvergeWindow is the paper's window of 16 filtered values.
	ConvergeWindow int
	// Change is the relative departure of q from q̄ that, sustained over
	// Window successive values, is a change of the stage's behaviour: the
	// statistics restart without an output (a mixed estimate would be
	// neither phase's), §VI's two-phase runs.
	Change float64
}

// DefaultParams are the constants used unless a test says otherwise. The
// tolerance was calibrated on seeded synthetic series (raftlib_test.go):
// with 10% noise per period an estimate converges after ~100 periods.
var DefaultParams = Params{Window: 32, Tolerance: 1e-3, ConvergeWindow: 16, Change: 0.2}

// Equation 2, x ∈ [−2, 2]: e^(−x²/2)/√(2π). Its five values sum to 0.991;
// they are normalised to 1 here, or every estimate would be 0.9% low.
var gaussian = func() [5]float64 {
	var k [5]float64
	sum := 0.0
	for i := range k {
		x := float64(i - 2)
		k[i] = math.Exp(-x*x/2) / math.Sqrt(2*math.Pi)
		sum += k[i]
	}
	for i := range k {
		k[i] /= sum
	}
	return k
}()

// Equation 4, x ∈ [−1, 1], σ = 1/2: the Gaussian of radius 1 and the
// Laplacian combined, as the paper applies them (not normalised: it is a
// rate-of-change detector, and the paper's values are used as written).
var laplacianGaussian = func() [3]float64 {
	var k [3]float64
	const s = 0.5
	for i := range k {
		x := float64(i - 1)
		g := math.Exp(-x * x / (2 * s * s))
		k[i] = x*x*g/(math.Sqrt(2*math.Pi)*math.Pow(s, 5)) - g/(math.Sqrt(2*math.Pi)*math.Pow(s, 3))
	}
	return k
}()

// z95 is the standard normal's 95th percentile (Equation 3).
const z95 = 1.64485

// Estimate is one converged q̄: the stage's non-blocking service rate over
// the periods since the statistics last restarted.
type Estimate struct {
	TuplesPerS float64 `json:"tuples_per_s"`
	AtNs       int64   `json:"at_ns"` // when it converged, from the estimator's start
	Qs         int     `json:"qs"`    // the q values averaged
}

// RaftLib is one stage's estimator. It is fed by one goroutine.
type RaftLib struct {
	p        Params
	s        []float64 // S, a ring of the last w rates
	sNext    int
	sFull    bool
	filtered []float64 // S′ (scratch)
	ordered  []float64 // S oldest first (scratch)
	// updateStats: Welford's running mean and variance of q (q̄ and σ_q).
	n        int
	mean, m2 float64
	errs     [3]float64 // the last three errors of q̄, for Equation 4
	nErrs    int
	window   []float64 // the last ConvergeWindow filtered errors (ring)
	wNext    int
	wLen     int
	off      int // successive q more than Change from q̄
	periods  int
	changes  int
	phases   []Phase
	// recent holds the current phase's latest estimates (a ring of up to
	// phaseMedianOf), sorted is the scratch its median is taken in.
	recent, sorted []float64
	recentNext     int
	changed        bool // a change after the last output: no current estimate
}

// Phase is a run of converged estimates that agree (each within Change of
// the phase's median so far): one behaviour of the stage (Figure 10).
type Phase struct {
	// TuplesPerS is the median of its estimates (of its latest
	// phaseMedianOf, in a phase that has more).
	TuplesPerS float64 `json:"tuples_per_s"`
	FromNs     int64   `json:"from_ns"` // its first and last estimate's time
	ToNs       int64   `json:"to_ns"`
	Estimates  int     `json:"estimates"`
}

// phaseMedianOf bounds the estimates a phase's median is taken over. Under
// load a period closes at every bucket and an estimate converges every
// ~100 periods, hundreds a second: a median over all of a long phase's
// estimates cost more with every one (4.4 µs a period after 400 k
// periods, and memory without bound); over the latest 255 it costs the
// same at any age.
const phaseMedianOf = 255

// NewRaftLib returns an estimator with params p.
func NewRaftLib(p Params) *RaftLib {
	return &RaftLib{p: p, s: make([]float64, p.Window), filtered: make([]float64, 0, p.Window),
		ordered: make([]float64, 0, p.Window), window: make([]float64, p.ConvergeWindow),
		recent: make([]float64, 0, phaseMedianOf), sorted: make([]float64, 0, phaseMedianOf)}
}

// Push adds one non-blocking period's rate, observed at atNs.
func (r *RaftLib) Push(rate float64, atNs int64) {
	if math.IsNaN(rate) || math.IsInf(rate, 0) || rate < 0 {
		return
	}
	r.periods++
	r.s[r.sNext] = rate
	if r.sNext++; r.sNext == len(r.s) {
		r.sNext, r.sFull = 0, true
	}
	if !r.sFull {
		return
	}
	q := r.quantile()
	if r.n > 0 && math.Abs(q-r.mean) > r.p.Change*r.mean {
		if r.off++; r.off >= r.p.Window {
			r.resetStats()
			r.changes++
			r.changed = true
		}
	} else {
		r.off = 0
	}
	r.updateStats(q)
	if r.converged() {
		r.output(Estimate{TuplesPerS: r.mean, AtNs: atNs, Qs: r.n})
		r.resetStats()
	}
}

// output records a converged estimate in the current phase, or starts a
// new phase when it departs from the current one (or a change was seen).
func (r *RaftLib) output(e Estimate) {
	n := len(r.phases)
	if n == 0 || r.changed || math.Abs(e.TuplesPerS-r.phases[n-1].TuplesPerS) > r.p.Change*r.phases[n-1].TuplesPerS {
		r.phases = append(r.phases, Phase{FromNs: e.AtNs})
		r.recent, r.recentNext = r.recent[:0], 0
		n++
	}
	ph := &r.phases[n-1]
	ph.ToNs = e.AtNs
	ph.Estimates++
	if len(r.recent) < phaseMedianOf {
		r.recent = append(r.recent, e.TuplesPerS)
	} else {
		r.recent[r.recentNext] = e.TuplesPerS
		r.recentNext = (r.recentNext + 1) % phaseMedianOf
	}
	r.sorted = append(r.sorted[:0], r.recent...)
	ph.TuplesPerS = median(r.sorted)
	r.changed = false
}

// median sorts v in place and returns its median.
func median(v []float64) float64 {
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// quantile filters S (oldest first) and returns Equation 3's q.
func (r *RaftLib) quantile() float64 {
	w := len(r.s)
	// S in order once, rather than a division per element read (a period
	// closes at every bucket under load: 2.1 µs a period before).
	in := append(append(r.ordered[:0], r.s[r.sNext:]...), r.s[:r.sNext]...)
	r.ordered = in
	f := r.filtered[:0]
	// No padding: S′ is 2×radius shorter than S (Algorithm 1).
	for i := 2; i < w-2; i++ {
		v := 0.0
		for k, g := range gaussian {
			v += g * in[i+k-2]
		}
		f = append(f, v)
	}
	r.filtered = f
	mean := 0.0
	for _, v := range f {
		mean += v
	}
	mean /= float64(len(f))
	ss := 0.0
	for _, v := range f {
		ss += (v - mean) * (v - mean)
	}
	sd := 0.0
	if len(f) > 1 {
		sd = math.Sqrt(ss / float64(len(f)-1))
	}
	return mean + z95*sd
}

// updateStats adds q to the running mean q̄ and keeps the filtered error.
func (r *RaftLib) updateStats(q float64) {
	r.n++
	d := q - r.mean
	r.mean += d / float64(r.n)
	r.m2 += d * (q - r.mean)
	if r.n < 2 || r.mean <= 0 {
		return
	}
	relErr := math.Sqrt(r.m2/float64(r.n-1)) / math.Sqrt(float64(r.n)) / r.mean
	r.errs[0], r.errs[1], r.errs[2] = r.errs[1], r.errs[2], relErr
	if r.nErrs++; r.nErrs < 3 {
		return
	}
	v := 0.0
	for k, l := range laplacianGaussian {
		v += l * r.errs[k]
	}
	r.window[r.wNext] = v
	r.wNext = (r.wNext + 1) % len(r.window)
	r.wLen = min(r.wLen+1, len(r.window))
}

// converged is QConverged(): the last ConvergeWindow filtered errors all
// within the tolerance of zero.
func (r *RaftLib) converged() bool {
	if r.wLen < len(r.window) {
		return false
	}
	for _, v := range r.window {
		if math.Abs(v) > r.p.Tolerance {
			return false
		}
	}
	return true
}

func (r *RaftLib) resetStats() {
	r.n, r.mean, r.m2, r.nErrs, r.wLen, r.wNext, r.off = 0, 0, 0, 0, 0, 0, 0
}

// Phases are the runs of agreeing estimates so far, oldest first.
func (r *RaftLib) Phases() []Phase { return append([]Phase(nil), r.phases...) }

// Current is the current phase's rate (the median of its estimates),
// unless the stage's behaviour changed after its last estimate: then there
// is none until the next convergence.
func (r *RaftLib) Current() (float64, bool) {
	if len(r.phases) == 0 || r.changed {
		return 0, false
	}
	return r.phases[len(r.phases)-1].TuplesPerS, true
}

// Periods is the number of non-blocking periods pushed.
func (r *RaftLib) Periods() int { return r.periods }

// Changes is the number of behaviour changes detected.
func (r *RaftLib) Changes() int { return r.changes }
