package activity

import "sort"

// clip is x ending the message delay after it was sent if it is longer
// (and longer than its error bound, so that it does not become
// ambiguous), unless its receiver was waiting for input from then until
// it came and it is not Internal (see Options.MessageDelayNs). A
// receiver that waited at the clip point and then took other buckets
// first was not held up by this one: in an overloaded run the lane's
// brief waits between batches left 0.77 s queueing times whole, each
// spanning windows as a path of its own. A receiver whose activities
// there are not in yet is taken as busy: the clip SnailTrail always makes.
func (b *Builder) clip(x Transfer) Transfer {
	d := b.opt.MessageDelayNs
	if d <= 0 || x.Ambiguous() {
		return x
	}
	at := x.SentNs + max(d, x.ErrNs)
	if x.RecvNs <= at {
		return x
	}
	if a, ok := b.activityAt(x.To, at); ok && inputWaitKind(a.Kind) && !x.Internal && a.EndNs >= x.RecvNs {
		return x
	}
	x.RecvNs = at
	return x
}

// activityAt is worker wk's activity whose span holds t, among the
// activities the builder still has (ok false: none, e.g. an unlogged gap).
func (b *Builder) activityAt(wk int, t int64) (Activity, bool) {
	acts := b.acts[wk]
	i := sort.Search(len(acts), func(i int) bool { return acts[i].EndNs > t })
	if i < len(acts) && acts[i].StartNs <= t {
		return acts[i], true
	}
	return Activity{}, false
}
