/*
 * cref-recv: the plain C reference receiver. One PULL socket binds
 * ENDPOINT (a port of * picks a free one; the endpoint is printed on
 * stderr as "listening on ENDPOINT") and receives with zmq_recv into a
 * buffer until COUNT messages of exactly SIZE bytes have arrived (other
 * sizes, such as dgsend's end marker, are counted apart), or until no
 * message came for IDLE_MS after the first. The rate is taken from the
 * first counted message to the last. Prints one JSON line.
 *
 *   cref-recv 'tcp://127.0.0.1:*' 124 3000000 2000
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
	if (argc != 5) {
		fprintf(stderr, "usage: %s ENDPOINT SIZE COUNT IDLE_MS\n", argv[0]);
		return 2;
	}
	long size = strtol(argv[2], NULL, 10), count = strtol(argv[3], NULL, 10);
	int idle = atoi(argv[4]), forever = -1;
	if (size < 1 || size > (1 << 24) || count < 1 || idle < 1) {
		fprintf(stderr, "cref-recv: SIZE must be 1..16777216, COUNT and IDLE_MS positive\n");
		return 2;
	}
	void *ctx = zmq_ctx_new();
	void *pull = zmq_socket(ctx, ZMQ_PULL);
	if (zmq_bind(pull, argv[1]) != 0) {
		fprintf(stderr, "cref-recv: bind %s: %s\n", argv[1], zmq_strerror(errno));
		return 1;
	}
	char ep[256];
	size_t eplen = sizeof ep;
	zmq_getsockopt(pull, ZMQ_LAST_ENDPOINT, ep, &eplen);
	fprintf(stderr, "listening on %s\n", ep);
	fflush(stderr);
	char *buf = malloc(size + 1);
	long got = 0, other = 0, stamped = 0;
	double first = 0, last = 0;
	int timeout = forever; /* for the first message; then IDLE_MS */
	zmq_setsockopt(pull, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
	while (got < count) {
		int n = zmq_recv(pull, buf, size + 1, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break; /* idle: the sender is done or gone */
			fprintf(stderr, "cref-recv: receive: %s\n", zmq_strerror(errno));
			return 1;
		}
		if (n != size) {
			other++;
			continue;
		}
		if (++got == 1) {
			first = now();
			zmq_setsockopt(pull, ZMQ_RCVTIMEO, &idle, sizeof idle);
		} else if ((got & 1023) == 0 || got == count) {
			/* The clock is read once per 1024 messages, not per message. */
			last = now();
			stamped = got;
		}
	}
	double took = last - first;
	printf("{\"messages\": %ld, \"other_messages\": %ld, \"seconds\": %.6f, \"messages_per_s\": %.1f}\n",
	       got, other, took, took > 0 ? (stamped - 1) / took : 0.0);
	zmq_close(pull);
	zmq_ctx_term(ctx);
	free(buf);
	return got == count ? 0 : 3;
}
