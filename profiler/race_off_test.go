//go:build !race

package profiler

// raceDetector: the test binary runs with the race detector.
const raceDetector = false
