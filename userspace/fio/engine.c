// SPDX-License-Identifier: GPL-2.0-only
/*
 * The directnvm fio ioengine: fio's queue/commit/getevents/event on libnvmedl's
 * submit/kick/poll, one handle per fio thread, I/O buffers carved from the handle's DMA
 * slice by fio's iomem hooks (fio's io_u buffers are the device's buffers: no copy).
 *
 *   ioengine=external:/usr/lib/fio/libfio_directnvm.so  thread=1  [core=N] [priority=0..3]
 *   [scheduler=fifo|priority] [batch=N]
 *
 * Each io_u is its own request tag, so a completion leads straight back to its io_u.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "dnvm.h"

/* Polls without a completion before a getevents without timeout gives up (the library
 * bounds each batch by its own timeout; this only guards against a silent engine). */
#define DNVM_STALL_NS (60ULL * 1000 * 1000 * 1000)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static int dnvm_init(struct thread_data *td)
{
	struct dnvm_options *o = td->eo;
	struct dnvm_thread *s = td->io_ops_data;
	unsigned int depth = td->o.iodepth ? td->o.iodepth : 1;
	int e;

	if (!s) {
		log_err("directnvm: job '%s': not set up (needs create_serialize=1, fio's default)\n", td->o.name);
		return 1;
	}
	s->h = nvmedl_create_handle_with(s->core, o->scheduler);
	if (!s->h) {
		e = nvmedl_errno();
		log_err("directnvm: job '%s': cannot claim core %d: %s\n", td->o.name, s->core, nvmedl_strerror(e));
		return 1;
	}
	if ((e = nvmedl_set_handle(s->h, "iodepth", depth)) < 0 || (e = nvmedl_set_handle(s->h, "priority", o->priority)) < 0 ||
	    (e = nvmedl_set_handle(s->h, "batch", o->batch)) < 0) {
		log_err("directnvm: job '%s': handle options: %s\n", td->o.name, nvmedl_strerror(e));
		return 1;
	}
	s->comps = calloc(depth, sizeof(*s->comps));
	s->events = calloc(depth, sizeof(*s->events));
	if (!s->comps || !s->events) {
		log_err("directnvm: job '%s': out of memory\n", td->o.name);
		return 1;
	}
	dprint(FD_IO, "directnvm: job %s on core %d, revision %d\n", td->o.name, s->core, nvmedl_handle_revision(s->h));
	return 0;
}

/* The whole io_u buffer pool from the handle's data slice: every io_u->buf is DMA memory. */
static int dnvm_iomem_alloc(struct thread_data *td, size_t total)
{
	struct dnvm_thread *s = td->io_ops_data;

	td->orig_buffer = nvmedl_buf_alloc(s->h, total);
	if (!td->orig_buffer) {
		log_err("directnvm: job '%s': %zu bytes of I/O buffers: %s\n", td->o.name, total,
			nvmedl_strerror(nvmedl_errno()));
		return 1;
	}
	return 0;
}

static void dnvm_iomem_free(struct thread_data *td)
{
	struct dnvm_thread *s = td->io_ops_data;

	if (s && s->h && td->orig_buffer)
		nvmedl_buf_free(s->h, td->orig_buffer);
	td->orig_buffer = NULL;
}

static enum fio_q_status dnvm_queue(struct thread_data *td, struct io_u *io_u)
{
	struct dnvm_thread *s = td->io_ops_data;
	int op, r;

	fio_ro_check(td, io_u);
	switch (io_u->ddir) {
	case DDIR_READ:
		op = NVMEDL_OP_READ;
		break;
	case DDIR_WRITE:
		op = NVMEDL_OP_WRITE;
		break;
	case DDIR_SYNC:
	case DDIR_DATASYNC:
		/* an engine without the flush command (rev 1) has no volatile cache in the model */
		r = nvmedl_handle_has(s->h, NVMEDL_CAP_FLUSH) > 0 ? nvmedl_flush(s->h) : 0;
		io_u->error = r < 0 ? EIO : 0;
		return FIO_Q_COMPLETED;
	default:
		io_u->error = EINVAL;
		return FIO_Q_COMPLETED;
	}
	r = nvmedl_submit_tagged(s->h, op, io_u->xfer_buf, io_u->offset / DNVM_LBA, (uint32_t) io_u->xfer_buflen, -1,
				 (uint64_t) (uintptr_t) io_u);
	if (r == NVMEDL_E_QUEUE_FULL)
		return FIO_Q_BUSY;
	if (r < 0) {
		log_err("directnvm: job '%s': %s at offset %llu, %llu bytes: %s\n", td->o.name,
			io_u->ddir == DDIR_READ ? "read" : "write", io_u->offset, io_u->xfer_buflen, nvmedl_strerror(r));
		io_u->error = r > -1000 ? -r : EIO;
		return FIO_Q_COMPLETED;
	}
	s->queued++;
	return FIO_Q_QUEUED;
}

/* The doorbell: start what fio staged, whatever the batch threshold. */
static int dnvm_commit(struct thread_data *td)
{
	struct dnvm_thread *s = td->io_ops_data;

	return nvmedl_kick(s->h) < 0 ? -EIO : 0;
}

static int dnvm_getevents(struct thread_data *td, unsigned int min, unsigned int max, const struct timespec *t)
{
	struct dnvm_thread *s = td->io_ops_data;
	uint64_t limit = t ? (uint64_t) t->tv_sec * 1000000000ULL + (uint64_t) t->tv_nsec : DNVM_STALL_NS;
	uint64_t start = 0;
	unsigned int got = 0, empty = 0;
	int n, i;

	while (got < max) {
		n = nvmedl_poll_completions(s->h, s->comps, (int) (max - got));
		if (n < 0)
			return -EIO;
		for (i = 0; i < n; i++) {
			struct io_u *io_u = (struct io_u *) (uintptr_t) s->comps[i].tag;
			if (s->comps[i].result < 0) {
				log_err("directnvm: job '%s': %s at offset %llu failed: %s (NVMe status 0x%x)\n", td->o.name,
					io_u->ddir == DDIR_READ ? "read" : "write", io_u->offset,
					nvmedl_strerror(s->comps[i].result), s->comps[i].nvme_status);
				io_u->error = EIO;
				io_u->resid = io_u->xfer_buflen;
			} else {
				io_u->error = 0;
				io_u->resid = 0;
			}
			s->events[got++] = io_u;
		}
		s->queued -= (unsigned int) n;
		if (got >= min && (n == 0 || got >= max))
			break;
		if (n)
			continue;
		/* Nothing yet: read the clock now and then only (it costs more than a poll). */
		if ((++empty & 1023) == 0) {
			if (!start)
				start = now_ns();
			else if (now_ns() - start > limit) {
				if (t)
					break;
				log_err("directnvm: job '%s': no completion for %llu s with %u requests queued\n", td->o.name,
					(unsigned long long) (DNVM_STALL_NS / 1000000000ULL), s->queued);
				return -ETIMEDOUT;
			}
		}
	}
	s->nr_events = got;
	return (int) got;
}

static struct io_u *dnvm_event(struct thread_data *td, int event)
{
	struct dnvm_thread *s = td->io_ops_data;

	return s->events[event];
}

static int dnvm_open_file(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

static int dnvm_close_file(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

static void dnvm_cleanup(struct thread_data *td)
{
	dnvm_release(td);
}

struct ioengine_ops ioengine = {
	.name = "directnvm",
	.version = FIO_IOOPS_VERSION,
	.flags = FIO_RAWIO | FIO_NOEXTEND | FIO_NODISKUTIL | FIO_MEMALIGN | FIO_DISKLESSIO,
	.setup = dnvm_setup,
	.init = dnvm_init,
	.queue = dnvm_queue,
	.commit = dnvm_commit,
	.getevents = dnvm_getevents,
	.event = dnvm_event,
	.cleanup = dnvm_cleanup,
	.open_file = dnvm_open_file,
	.close_file = dnvm_close_file,
	.iomem_alloc = dnvm_iomem_alloc,
	.iomem_free = dnvm_iomem_free,
	.option_struct_size = sizeof(struct dnvm_options),
	.options = dnvm_options,
};
