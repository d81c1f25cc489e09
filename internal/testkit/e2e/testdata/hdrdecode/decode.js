// Reads an HdrHistogram interval log (dgrecv --hgrm's .hlog) with
// HdrHistogram's own JavaScript port and prints what that port makes of
// it as JSON: the count, extremes, percentiles and its own .hgrm print.
"use strict";
const fs = require("fs");
const hdr = require("hdr-histogram-js");

const reader = new hdr.HistogramLogReader(fs.readFileSync(process.argv[2], "utf8"), 64);
const h = reader.nextIntervalHistogram();
if (h === null) {
  console.error("no interval histogram in " + process.argv[2]);
  process.exit(1);
}
const out = {
  count: h.totalCount,
  min: h.minNonZeroValue,
  max: h.maxValue,
  p50: h.getValueAtPercentile(50),
  p90: h.getValueAtPercentile(90),
  p99: h.getValueAtPercentile(99),
  p999: h.getValueAtPercentile(99.9),
  interval_ms: h.endTimeStampMsec - h.startTimeStampMsec,
  hgrm: h.outputPercentileDistribution(5, 1e6),
};
if (reader.nextIntervalHistogram() !== null) {
  console.error("more than one interval in " + process.argv[2]);
  process.exit(1);
}
console.log(JSON.stringify(out));
