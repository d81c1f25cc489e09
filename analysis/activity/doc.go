// Package activity builds a program activity graph (PAG) from the stages'
// activities and the messages between them, and analyses it, after
// SnailTrail (Hoffmann et al., NSDI '18) and ST2
// (../shared/reference/st2-snailtrail-thesis.txt, §3.5-§3.6, §5.1):
//
//   - local edges join each worker's consecutive activities; a gap between
//     two logged activities is waiting when longer than a threshold (ST2:
//     15 µs) and busy otherwise;
//   - remote edges join a bucket's send with its receive, across nodes with
//     the clock relation's error bound; one whose order is ambiguous within
//     the bound is marked and never traversed, never silently ordered;
//   - windows are fixed (SnailTrail 1's semantics: the harness has no
//     epochs), and an edge that crosses a window's boundary is split;
//   - critical participation (SnailTrail 1's definition, ../shared/SPEC.md),
//     k-hops from waiting activities, invariants and per-window metrics.
//
// Times are nanoseconds in one reference domain (the TSC relation's); path
// counts are kept as logarithms, since they overflow 64 bits quickly.
//
// All the graph's code that is not the live view (sweep/watch) is here:
// Open reads a profiled run's state-change logs (activity.<stage>) and
// feeds its per-tuple joins (package analysis) as message edges through a
// Stream in bounded memory, and WriteFiles writes pag.json and pag.csv.
package activity
