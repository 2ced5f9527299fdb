/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * fio ioengine "directnvm": shared declarations of the engine's files.
 *
 *   options.c  the engine options (core, priority, scheduler, batch) and their table
 *   setup.c    job checks and the core claim, done before any job starts I/O
 *   engine.c   the ioengine_ops table: buffers, queue/commit/getevents/event, cleanup
 *
 * Built against the configured source of the Debian fio package that runs the engine
 * (scripts/fio-src.sh, userspace/fio/build.sh), so fio's structs are the binary's.
 */
#ifndef DNVM_FIO_H
#define DNVM_FIO_H

#include "fio.h"
#include "optgroup.h"
#include "libnvmedl.h"

/* Engine options of one job (td->eo). fio stores td in the first pointer slot. */
struct dnvm_options {
	void *pad;
	char *core;      /* "auto" (CPU affinity, else the next free core) or a core number */
	unsigned int priority; /* urgency class of the job's I/O: 0 urgent .. 3 low */
	char *scheduler; /* level-1 scheduler: "fifo" or "priority" */
	unsigned int batch; /* staged requests that start an HDU batch */
};

/* Per-thread state (td->io_ops_data): one libnvmedl handle, claimed in ->setup. */
struct dnvm_thread {
	struct nvmedl_handle *h;
	int core;
	struct nvmedl_completion *comps; /* poll buffer; each tag is the io_u's address */
	struct io_u **events;       /* completed io_us of the last getevents */
	unsigned int nr_events;
	unsigned int queued;        /* submitted, not yet reaped */
};

extern struct fio_option dnvm_options[];
extern struct ioengine_ops ioengine;

/* Checks the job, claims its core and fills td->io_ops_data; 0 or 1 (reason logged). */
int dnvm_setup(struct thread_data *td);
/* Releases the core and frees the per-thread state (idempotent). */
void dnvm_release(struct thread_data *td);

/* Block unit of the library: every length, offset and buffer is a multiple of it. */
#define DNVM_BLOCK 4096ULL
#define DNVM_LBA 512ULL

#endif
