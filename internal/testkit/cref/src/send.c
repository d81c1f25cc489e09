/*
 * cref-send: the plain C reference sender. One PUSH socket connects to
 * ENDPOINT and sends COUNT messages of SIZE bytes (a preallocated buffer)
 * as fast as zmq_send takes them, or, with RATE, at RATE messages per
 * second (busy-waiting on the clock for each message's slot, as the
 * paper's sender does), then waits up to 10 s for the queue to drain. Prints one JSON line: messages, seconds, messages per second and
 * the sending thread's CPU time per message.
 * Nothing else happens per message: this is the yardstick that dgsend's
 * emission is measured against (make bench).
 *
 *   cref-send tcp://127.0.0.1:5555 124 3000000
 *   cref-send tcp://127.0.0.1:5555 10024 60000 20000
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

static double cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: %s ENDPOINT SIZE COUNT [RATE]\n", argv[0]);
		return 2;
	}
	long size = strtol(argv[2], NULL, 10), count = strtol(argv[3], NULL, 10);
	double rate = argc == 5 ? strtod(argv[4], NULL) : 0;
	if (rate < 0) {
		fprintf(stderr, "cref-send: RATE must not be negative\n");
		return 2;
	}
	if (size < 1 || size > (1 << 24) || count < 1) {
		fprintf(stderr, "cref-send: SIZE must be 1..16777216 and COUNT positive\n");
		return 2;
	}
	void *ctx = zmq_ctx_new();
	void *push = zmq_socket(ctx, ZMQ_PUSH);
	int linger = 10000;
	zmq_setsockopt(push, ZMQ_LINGER, &linger, sizeof linger);
	if (zmq_connect(push, argv[1]) != 0) {
		fprintf(stderr, "cref-send: connect %s: %s\n", argv[1], zmq_strerror(errno));
		return 1;
	}
	/* Real bytes, as any sender's: a calloc'd buffer that is never written
	 * is the kernel's shared zero page, whose one 4 KiB frame stays in
	 * cache however large the message, which made libzmq's copy of a
	 * 10 KB message ~13% faster than from memory that holds data. */
	char *buf = malloc(size);
	if (buf == NULL) {
		fprintf(stderr, "cref-send: out of memory\n");
		return 1;
	}
	for (long i = 0; i < size; i++)
		buf[i] = (char)(i * 131 + 7);
	double start = now(), cpu0 = cpu();
	for (long i = 0; i < count; i++) {
		if (rate > 0)
			while (now() < start + i / rate)
				;
		while (zmq_send(push, buf, size, 0) < 0) {
			if (errno != EINTR) {
				fprintf(stderr, "cref-send: send: %s\n", zmq_strerror(errno));
				return 1;
			}
		}
	}
	double took = now() - start, used = cpu() - cpu0;
	printf("{\"messages\": %ld, \"seconds\": %.6f, \"messages_per_s\": %.1f, \"thread_cpu_ns_per_message\": %.1f}\n",
	       count, took, count / took, used * 1e9 / count);
	zmq_close(push);
	zmq_ctx_term(ctx);
	free(buf);
	return 0;
}
