// cpu-gaps: how much of a pinned, spinning thread's time the machine takes
// away (a VM's steal, interrupts, other threads), and in what gaps. It
// reads the TSC in a tight loop on one CPU and counts every step above
// 5 µs as a gap. The service-rate estimates and the capacity they are
// judged against pay these gaps differently (BENCHMARKS.md, issue 14).
//
//   cc -O2 -o /tmp/cpu-gaps scripts/cpu-gaps.c && /tmp/cpu-gaps CPU SECONDS
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

static int cmp(const void *a, const void *b) {
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: cpu-gaps CPU SECONDS\n");
		return 2;
	}
	int cpu = atoi(argv[1]);
	double secs = atof(argv[2]);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0) {
		perror("sched_setaffinity");
		return 1;
	}
	// TSC frequency from CLOCK_MONOTONIC_RAW over 200 ms.
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC_RAW, &a);
	uint64_t t0 = __rdtsc();
	do clock_gettime(CLOCK_MONOTONIC_RAW, &b);
	while ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec) < 2e8);
	double hz = (__rdtsc() - t0) / ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
	uint64_t thr = (uint64_t)(hz * 5e-6), end = __rdtsc() + (uint64_t)(hz * secs);
	// Every gap counts in the total and the lost time; the first 1 M are
	// kept for the percentiles.
	size_t n = 0, total = 0, cap = 1 << 20;
	uint64_t *gaps = malloc(cap * sizeof *gaps), lost = 0, prev = __rdtsc();
	if (gaps == NULL) {
		perror("malloc");
		return 1;
	}
	for (uint64_t now = prev; now < end; prev = now) {
		now = __rdtsc();
		if (now - prev > thr) {
			lost += now - prev;
			total++;
			if (n < cap)
				gaps[n++] = now - prev;
		}
	}
	qsort(gaps, n, sizeof *gaps, cmp);
	printf("cpu %d, %.1f s: %.2f%% of the time in %zu gaps above 5 us (%.0f/s), median %.1f us, p99 %.1f us, max %.1f us\n",
	       cpu, secs, 100.0 * lost / (hz * secs), total, total / secs, n ? gaps[n / 2] / hz * 1e6 : 0,
	       n ? gaps[n * 99 / 100] / hz * 1e6 : 0, n ? gaps[n - 1] / hz * 1e6 : 0);
	return 0;
}
