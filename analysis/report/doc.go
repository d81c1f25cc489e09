// Package report renders a run directory as one self-contained HTML page
// (report.html): the sweep curve, lateness and latency per trial, per-pair
// latency with its error bound (the paper's Fig. 17), the clock methods
// side by side (Fig. 15), throughput over time and the configuration.
// Plots are inline SVG (gonum/plot); the page loads nothing from anywhere.
package report
