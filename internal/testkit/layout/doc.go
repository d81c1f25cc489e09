// Package layout holds the tests of the tree's dependency rules that the
// compiler cannot check (docs/layout.md): which packages each binary may
// link, which packages may import which, and the size limits of files and
// functions. They run with make test, not only in review.
package layout
