// Package termsafe is the one escaping of text for terminals: a name read
// from a run directory from elsewhere (a node directory, a log file, a
// stage or worker in a JSON file) may hold ESC, OSC, BEL, CR or a newline,
// which a terminal would obey (move the cursor, set the title, rewrite a
// line) or which would forge an output line. Escape shows every control
// character as a Go escape (\x1b, \n, \u009b); Writer does the same for a
// whole output stream, keeping its own newlines and tabs.
package termsafe
