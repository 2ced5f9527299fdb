// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * dlexample: the DirectNVM paper's example program on the libnvmedl C API.
 *
 * One thread per core, pinned to that CPU: each writes N 4 KiB pages (pattern = core and page
 * index) to its own LBA range with nvmedl_write_async, waits, then reads the whole range back
 * with nvmedl_read_async, waits, and verifies every byte. Sequential, then random order. A
 * range larger than the core's data slice goes through a window buffer (at most 8 MiB) one
 * window at a time. Prints MB/s per phase; exit 0 only if all data verified.
 *
 * usage: dlexample [pages-per-core=256] [cores=all] [priority=1] [iodepth=64]
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <sched.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libnvmedl.h"

#define PAGE 4096u
#define LBAS_PER_PAGE (PAGE / 512u)
#define MAX_WINDOW_PAGES 2048u /* 8 MiB */

struct job {
	int core;
	unsigned pages;
	unsigned priority;
	unsigned iodepth;
	int random;
	int failed;
	double write_us, read_us;
};

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static uint64_t pattern(int core, unsigned page, unsigned word)
{
	return ((uint64_t)core << 48) ^ ((uint64_t)page << 16) ^ word;
}

/* Issue pages [first, first + n) once (async) in `order` (window-relative), waiting whenever
 * iodepth requests are pending. */
static int run_pass(struct nvmedl_handle *h, struct job *j, uint8_t *bufs, const unsigned *order,
		    unsigned first, unsigned n, int write)
{
	unsigned inflight = 0;
	for (unsigned k = 0; k < n; k++) {
		unsigned p = order[k];
		uint64_t lba = ((uint64_t)j->core * j->pages + first + p) * LBAS_PER_PAGE;
		void *buf = bufs + (size_t)p * PAGE;
		int64_t tag = write ? nvmedl_write_async(h, buf, lba, PAGE) : nvmedl_read_async(h, buf, lba, PAGE);
		if (tag < 0) {
			fprintf(stderr, "core %d: %s_async: %s\n", j->core, write ? "write" : "read", nvmedl_strerror((int)tag));
			return -1;
		}
		if (++inflight == j->iodepth) {
			int r = nvmedl_wait(h);
			if (r < 0) {
				fprintf(stderr, "core %d: wait: %s\n", j->core, nvmedl_strerror(r));
				return -1;
			}
			inflight = 0;
		}
	}
	int r = nvmedl_wait(h);
	if (r < 0) {
		fprintf(stderr, "core %d: wait: %s\n", j->core, nvmedl_strerror(r));
		return -1;
	}
	return 0;
}

static void fill_window(const struct job *j, uint8_t *bufs, unsigned first, unsigned n)
{
	for (unsigned p = 0; p < n; p++) {
		uint64_t *w = (uint64_t *)(bufs + (size_t)p * PAGE);
		for (unsigned i = 0; i < PAGE / 8; i++)
			w[i] = pattern(j->core, first + p, i);
	}
}

static int check_window(const struct job *j, const uint8_t *bufs, unsigned first, unsigned n)
{
	for (unsigned p = 0; p < n; p++) {
		const uint64_t *w = (const uint64_t *)(bufs + (size_t)p * PAGE);
		for (unsigned i = 0; i < PAGE / 8; i++) {
			if (w[i] != pattern(j->core, first + p, i)) {
				fprintf(stderr, "core %d: page %u word %u: got %016" PRIx64 " want %016" PRIx64 "\n",
					j->core, first + p, i, w[i], pattern(j->core, first + p, i));
				return -1;
			}
		}
	}
	return 0;
}

static void *worker(void *arg)
{
	struct job *j = arg;
	j->failed = 1;
	/* The paper's pattern: the thread runs on the core whose HDU it drives. */
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(j->core, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0)
		fprintf(stderr, "core %d: cannot pin the thread (continuing unpinned)\n", j->core);
	struct nvmedl_handle *h = nvmedl_create_handle(j->core);
	if (!h) {
		fprintf(stderr, "core %d: create_handle: %s\n", j->core, nvmedl_strerror(nvmedl_errno()));
		return NULL;
	}
	nvmedl_set_handle(h, "iodepth", j->iodepth);
	nvmedl_set_handle(h, "priority", j->priority);
	unsigned win = j->pages < MAX_WINDOW_PAGES ? j->pages : MAX_WINDOW_PAGES;
	uint8_t *bufs = NULL;
	while (win > 0 && !(bufs = nvmedl_buf_alloc(h, (size_t)win * PAGE)))
		win /= 2; /* the data slice is smaller than the window */
	unsigned *order = malloc(sizeof(unsigned) * (win ? win : 1));
	if (!bufs || !order) {
		fprintf(stderr, "core %d: buffer allocation failed\n", j->core);
		goto out;
	}
	unsigned seed = 12345u + (unsigned)j->core;
	double t0 = now_us();
	/* Write the whole range, window by window. */
	for (unsigned first = 0; first < j->pages; first += win) {
		unsigned n = j->pages - first < win ? j->pages - first : win;
		for (unsigned p = 0; p < n; p++)
			order[p] = p;
		for (unsigned p = n - 1; j->random && p > 0; p--) { /* Fisher-Yates */
			unsigned q = (unsigned)rand_r(&seed) % (p + 1);
			unsigned t = order[p]; order[p] = order[q]; order[q] = t;
		}
		fill_window(j, bufs, first, n);
		if (run_pass(h, j, bufs, order, first, n, 1))
			goto out;
	}
	double t1 = now_us();
	double verify_us = 0;
	/* Then read it all back and verify, window by window. */
	for (unsigned first = 0; first < j->pages; first += win) {
		unsigned n = j->pages - first < win ? j->pages - first : win;
		for (unsigned p = 0; p < n; p++)
			order[p] = p;
		for (unsigned p = n - 1; j->random && p > 0; p--) {
			unsigned q = (unsigned)rand_r(&seed) % (p + 1);
			unsigned t = order[p]; order[p] = order[q]; order[q] = t;
		}
		memset(bufs, 0, (size_t)n * PAGE);
		if (run_pass(h, j, bufs, order, first, n, 0))
			goto out;
		double v0 = now_us();
		if (check_window(j, bufs, first, n))
			goto out;
		verify_us += now_us() - v0;
	}
	double t2 = now_us();
	j->write_us = t1 - t0;
	j->read_us = t2 - t1 - verify_us;
	j->failed = 0;
out:
	free(order);
	if (bufs)
		nvmedl_buf_free(h, bufs);
	nvmedl_destroy_handle(h);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned pages = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 256;
	int r = nvmedl_admin_init();
	if (r < 0) {
		fprintf(stderr, "nvmedl_admin_init: %s (%d)\n", nvmedl_strerror(r), r);
		return 2;
	}
	int cores = argc > 2 ? atoi(argv[2]) : nvmedl_cores();
	unsigned priority = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 1;
	unsigned iodepth = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 0) : 64;
	if (pages == 0 || cores <= 0 || cores > nvmedl_cores() || iodepth == 0 ||
	    (uint64_t)cores * pages * LBAS_PER_PAGE > nvmedl_capacity_lbas()) {
		fprintf(stderr, "usage: dlexample [pages-per-core] [cores] [priority 0-3] [iodepth]\n");
		return 2;
	}
	int failed = 0;
	for (int random = 0; random <= 1; random++) {
		struct job jobs[64];
		pthread_t th[64];
		for (int c = 0; c < cores && c < 64; c++) {
			jobs[c] = (struct job){ .core = c, .pages = pages, .priority = priority, .iodepth = iodepth, .random = random };
			pthread_create(&th[c], NULL, worker, &jobs[c]);
		}
		double wus = 0, rus = 0;
		for (int c = 0; c < cores && c < 64; c++) {
			pthread_join(th[c], NULL);
			failed |= jobs[c].failed;
			if (jobs[c].write_us > wus) wus = jobs[c].write_us;
			if (jobs[c].read_us > rus) rus = jobs[c].read_us;
		}
		double mb = (double)cores * pages * PAGE / 1e6;
		printf("%s: %d core(s) x %u pages: write %.1f MB/s, read %.1f MB/s, verify %s\n",
		       random ? "random" : "sequential", cores, pages, wus > 0 ? mb / wus * 1e6 : 0,
		       rus > 0 ? mb / rus * 1e6 : 0, failed ? "FAILED" : "ok");
	}
	nvmedl_admin_fini();
	return failed ? 1 : 0;
}
