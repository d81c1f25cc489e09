// Package numfmt formats the numbers people read (command output, rule
// details, the report) one way: four significant digits and a unit, so
// that "385.1 ms" in a table and in a rule's text are the same number.
// Machine-readable output (JSON, CSV) keeps the exact values instead.
package numfmt
