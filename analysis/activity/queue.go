package activity

import "slices"

// transferQueue holds transfers in order of send time, equal times in
// the order they came (so that a window's edges do not depend on how they
// were queued). They come nearly in order: one that is not is moved into
// place from the back.
type transferQueue struct {
	xs   []Transfer
	head int
}

func (q *transferQueue) Len() int      { return len(q.xs) - q.head }
func (q *transferQueue) top() Transfer { return q.xs[q.head] }

func (q *transferQueue) push(x Transfer) {
	if q.head > 1024 && q.head*2 >= len(q.xs) {
		n := copy(q.xs, q.xs[q.head:])
		q.xs, q.head = q.xs[:n], 0
	}
	i := len(q.xs)
	for i > q.head && q.xs[i-1].SentNs > x.SentNs {
		i--
	}
	q.xs = slices.Insert(q.xs, i, x)
}

func (q *transferQueue) pop() Transfer {
	x := q.xs[q.head]
	q.head++
	return x
}
