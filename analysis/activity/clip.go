package activity

import "sort"

// clip is x ending the message delay after it was sent if it is longer
// (and longer than its error bound, so that it does not become
// ambiguous), as SnailTrail's PAG construction does with its message
// delay: a bucket that sat in a queue while its receiver was busy did not
// hold the receiver up; its edge then joins the receiver's timeline
// inside what the receiver was doing, and paths follow that. A message
// that is not Internal keeps its whole flight when its receiver spent at
// least half of the time from the clip point until it came waiting for
// input: the receiver was ready, and what was ahead of the bucket outside
// it (a relay, a broker, the transport) held it up. Behind a relay
// forwarding 300 k/s, lanes waited 89-98% of every flight longer than
// 10 ms. A receiver busy or blocked most of the way had the bucket queued
// behind its own work: in an overloaded run the lane waited at most 6% of
// flights of up to 0.78 s, which, left whole because a brief wait between
// the transport's batches caught the clip point, each spanned windows as
// a path of its own. A receiver's activities not in yet are taken as
// busy: the clip SnailTrail always makes.
func (b *Builder) clip(x Transfer) Transfer {
	d := b.opt.MessageDelayNs
	if d <= 0 || x.Ambiguous() {
		return x
	}
	at := x.SentNs + max(d, x.ErrNs)
	if x.RecvNs <= at {
		return x
	}
	if !x.Internal && 2*(b.inputWaitTo(x.To, x.RecvNs)-b.inputWaitTo(x.To, at)) >= x.RecvNs-at {
		return x
	}
	x.RecvNs = at
	return x
}

// inputWaitTo is how long worker wk had waited for input up to t, counted
// from any fixed origin (differences are what matter), over the
// activities the builder still has.
func (b *Builder) inputWaitTo(wk int, t int64) int64 {
	acts, before := b.acts[wk], b.waitBefore[wk]
	if len(before) == 0 {
		return 0
	}
	i := sort.Search(len(acts), func(i int) bool { return acts[i].EndNs > t })
	if i == len(acts) {
		return before[i]
	}
	return before[i] + inputWaitNs(acts[i], t)
}

// inputWaitNs is how long a waited for input up to t.
func inputWaitNs(a Activity, t int64) int64 {
	if !inputWaitKind(a.Kind) || t <= a.StartNs {
		return 0
	}
	return min(t, a.EndNs) - a.StartNs
}

// appendWait extends a worker's running input wait (Builder.waitBefore:
// the input wait of its activities before each one, and last the whole
// of it) by its next activities. Only the clip reads it: without a
// message delay it is kept empty.
func (b *Builder) appendWait(before []int64, next ...Activity) []int64 {
	if b.opt.MessageDelayNs <= 0 {
		return before
	}
	if len(before) == 0 {
		before = append(make([]int64, 0, len(next)+1), 0)
	}
	for _, a := range next {
		before = append(before, before[len(before)-1]+inputWaitNs(a, a.EndNs))
	}
	return before
}
