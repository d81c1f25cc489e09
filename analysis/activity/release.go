package activity

import (
	"fmt"
	"sort"
)

// Releases: an operator blocked on its output resumes when the operator
// it feeds has done with what it gave it. When the two share a thread
// (one input's processors: YSB's filter, then its join), the fed one's
// end releases the blocked one, which then takes its next batch at once;
// without an edge for that hand-over, each operator's waiting cut every
// path through the thread, and only the senders' timeline carried paths.
const (
	// releaseWithinNs: the blocked operator's release comes this soon
	// after the fed one's busy activity ends (the same thread's next
	// calls: nanoseconds to a few microseconds).
	releaseWithinNs = 50_000
	// releaseResumeNs: its next busy activity starts this soon after
	// (longer, and it waited for its input, not for the release).
	releaseResumeNs = 1_000_000
)

// releasesAt adds to b.open the releases whose blocked activity ends in
// [w0, w1): for each pair (up, down) of Options.Releases, a transfer from
// the end of down's busy activity that released up to the start of up's
// next busy activity.
func (b *Builder) releasesAt(w0, w1 int64) {
	for _, pr := range b.opt.Releases {
		up, down := b.acts[pr[0]], b.acts[pr[1]]
		i := sort.Search(len(up), func(i int) bool { return up[i].EndNs >= w0 })
		for ; i < len(up) && up[i].EndNs < w1; i++ {
			if up[i].Kind != Blocked {
				continue
			}
			released := up[i].EndNs
			resume := -1
			for j := i + 1; j < len(up) && up[j].StartNs <= released+releaseResumeNs; j++ {
				if processingKind(up[j].Kind) {
					resume = j
					break
				}
			}
			if resume < 0 {
				continue
			}
			// down's last busy activity ending at or before the release
			k := sort.Search(len(down), func(k int) bool { return down[k].EndNs > released }) - 1
			for ; k >= 0 && !processingKind(down[k].Kind); k-- {
				if down[k].StartNs < released-releaseWithinNs {
					k = -1
					break
				}
			}
			if k < 0 || down[k].EndNs < released-releaseWithinNs {
				continue
			}
			b.open = append(b.open, Transfer{From: pr[1], To: pr[0], SentNs: down[k].EndNs, RecvNs: up[resume].StartNs, Tuples: 0})
		}
	}
}

// checkReleases refuses a pair that is not two of the n workers.
func checkReleases(rel [][2]int, n int) error {
	for _, pr := range rel {
		if pr[0] < 0 || pr[0] >= n || pr[1] < 0 || pr[1] >= n || pr[0] == pr[1] {
			return fmt.Errorf("activity: release pair %v is not two of the %d workers", pr, n)
		}
	}
	return nil
}
