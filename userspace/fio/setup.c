// SPDX-License-Identifier: GPL-2.0-only
/*
 * Job checks of the directnvm ioengine and its core assignment. ->setup runs in fio's main
 * thread for every job, one after another, before any job thread starts (create_serialize,
 * fio's default), so a job refused here does no I/O at all. Each refusal is one log line
 * "directnvm: job '<name>': <reason>" and fails the job (fio exits non-zero).
 *
 * Jobs run together between stonewalls; within such a section every job needs its own core.
 * The core is chosen here (the `core` option, else the job's cpus_allowed (split per job with
 * cpus_allowed_policy=split), else the lowest core no other job of the section uses), probed (claimed and released, so a core that
 * another process holds is refused now), and claimed for good by the job thread in ->init.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "dnvm.h"

static pthread_mutex_t dnvm_lock = PTHREAD_MUTEX_INITIALIZER;

static int refuse(struct thread_data *td, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(struct thread_data *td, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_err("directnvm: job '%s': %s\n", td->o.name, msg);
	td_vmsg(td, EINVAL, msg, "directnvm setup");
	return 1;
}

static bool is_dnvm(struct thread_data *td)
{
	return td->io_ops == &ioengine;
}

/* The stonewall section of every job: jobs of one section run at the same time. */
static int section_of(struct thread_data *target)
{
	struct thread_data *td;
	int i, section = 0;

	for_each_td(td, i) {
		if (i > 0 && td->o.stonewall)
			section++;
		if (td == target)
			return section;
	}
	return -1;
}

/* The core named by the job: the option, else the job's CPU of cpus_allowed/cpumask (the first
 * CPU of the mask, or with cpus_allowed_policy=split the one fio pins this job to); -1 if none.
 * Without cpus_allowed fio's mask is the whole process affinity (its default), which names
 * nothing: such a job is auto. */
static int named_core(struct thread_data *td, int *err)
{
	struct dnvm_options *o = td->eo;
	os_cpu_mask_t mask;
	char *end;
	long v;
	int c;

	*err = 0;
	if (o->core && strcmp(o->core, "auto")) {
		errno = 0;
		v = strtol(o->core, &end, 10);
		if (errno || *end || end == o->core || v < 0 || v > 1023) {
			*err = 1;
			return -1;
		}
		return (int) v;
	}
	if (!fio_option_is_set(&td->o, cpumask) || fio_cpu_count(&td->o.cpumask) <= 0)
		return -1;
	mask = td->o.cpumask;
	/* the CPU thread_main will pin the job to (fio's own split, by thread number) */
	if (td->o.cpus_allowed_policy == FIO_CPUS_SPLIT && fio_cpus_split(&mask, td->thread_number - 1) <= 0)
		return -1;
	for (c = 0; c < CPU_SETSIZE; c++)
		if (fio_cpu_isset(&mask, c))
			return c;
	return -1;
}

/* Jobs of this engine in the section of `td`. Marks in `taken` the cores of the jobs set up
 * before this one, and in `named` the cores that the jobs still to be set up name. */
static int section_jobs(struct thread_data *td, int section, bool *taken, bool *named, int ncores)
{
	struct thread_data *t;
	int i, n = 0, err, c;

	for_each_td(t, i) {
		if (!is_dnvm(t) || section_of(t) != section)
			continue;
		n++;
		if (t == td)
			continue;
		if (t->io_ops_data) {
			c = ((struct dnvm_thread *) t->io_ops_data)->core;
			if (c >= 0 && c < ncores)
				taken[c] = true;
		} else {
			c = named_core(t, &err);
			if (c >= 0 && c < ncores)
				named[c] = true;
		}
	}
	return n;
}

static unsigned long long max_bs(struct thread_data *td)
{
	unsigned long long m = 0;
	int d;

	for (d = DDIR_READ; d <= DDIR_WRITE; d++)
		if (td->o.max_bs[d] > m)
			m = td->o.max_bs[d];
	return m;
}

/* Block sizes and alignment: multiples of the library's block, within max_request. */
static int check_sizes(struct thread_data *td, unsigned long long max_req)
{
	unsigned int d, i;

	if (td->o.bs_unaligned)
		return refuse(td, "bs_unaligned is not supported (every I/O is a multiple of %llu bytes)", DNVM_BLOCK);
	for (d = DDIR_READ; d <= DDIR_WRITE; d++) {
		unsigned long long v[3] = { td->o.bs[d], td->o.min_bs[d], td->o.max_bs[d] };
		for (i = 0; i < 3; i++)
			if (v[i] % DNVM_BLOCK)
				return refuse(td, "block size %llu is not a multiple of the %llu-byte block", v[i], DNVM_BLOCK);
		for (i = 0; i < td->o.bssplit_nr[d]; i++)
			if (td->o.bssplit[d][i].bs % DNVM_BLOCK)
				return refuse(td, "bssplit size %llu is not a multiple of the %llu-byte block",
					      (unsigned long long) td->o.bssplit[d][i].bs, DNVM_BLOCK);
		if (td->o.max_bs[d] > max_req)
			return refuse(td, "block size %llu is above the maximum transfer (%llu bytes)",
				      (unsigned long long) td->o.max_bs[d], max_req);
		if (td->o.ba[d] % DNVM_BLOCK)
			return refuse(td, "blockalign %llu is not a multiple of the %llu-byte block",
				      (unsigned long long) td->o.ba[d], DNVM_BLOCK);
	}
	return 0;
}

/* The job's byte range within the namespace; sets every file's size to the capacity. */
static int check_range(struct thread_data *td, unsigned long long cap)
{
	unsigned long long start = td->o.start_offset + td->subjob_number * td->o.offset_increment;
	unsigned long long size = td->o.size;
	struct fio_file *f;
	unsigned int i;

	if (start % DNVM_BLOCK)
		return refuse(td, "offset %llu is not a multiple of the %llu-byte block", start, DNVM_BLOCK);
	if (start >= cap || (size && size > cap - start))
		return refuse(td, "range [%llu, %llu) is beyond the namespace capacity (%llu bytes)", start,
			      start + (size ? size : 0), cap);
	for_each_file(td, f, i) {
		f->real_file_size = cap;
		fio_file_set_size_known(f);
	}
	return 0;
}

static int probe(struct thread_data *td, int core, const char *sched, struct dnvm_thread *s, unsigned long long *max_req,
		 unsigned long long *slice)
{
	struct nvmedl_handle *h = nvmedl_create_handle_with(core, sched);
	int e;

	if (!h) {
		e = nvmedl_errno();
		if (e == NVMEDL_E_BUSY)
			return refuse(td, "core %d already claimed (by another process)", core);
		if (e == NVMEDL_E_INVALID_ARGUMENT)
			return refuse(td, "cannot claim core %d with scheduler '%s': invalid argument", core, sched);
		return refuse(td, "cannot claim core %d: %s", core, nvmedl_strerror(e));
	}
	*max_req = (unsigned long long) nvmedl_get_handle(h, "max_request");
	*slice = (unsigned long long) nvmedl_get_handle(h, "data_size");
	nvmedl_destroy_handle(h);
	s->core = core;
	return 0;
}

int dnvm_setup(struct thread_data *td)
{
	struct dnvm_options *o = td->eo;
	struct dnvm_thread *s;
	bool taken[1024] = { false }, named[1024] = { false };
	unsigned long long cap, max_req = 0, slice = 0, need;
	int ncores, section, njobs, core, err, r, c;

	/* Layout check: fio found this engine's ops and options where our headers say (io_ops
	 * lies near the end of thread_data, after thread_options and thread_stat). */
	if (td->io_ops != &ioengine || !o)
		return refuse(td, "fio's thread_data does not match the headers this engine was built with");
	if (!td->o.use_thread)
		return refuse(td, "needs thread=1 (one libnvmedl handle per fio thread)");
	if (td_trim(td))
		return refuse(td, "trim is not supported");
	if (td->o.iodepth > 1024)
		return refuse(td, "iodepth %u is above the handle's 1024 requests", td->o.iodepth);
	if (strcmp(o->scheduler, "fifo") && strcmp(o->scheduler, "priority"))
		return refuse(td, "unknown scheduler '%s' (fifo or priority)", o->scheduler);

	pthread_mutex_lock(&dnvm_lock);
	r = nvmedl_admin_init();
	if (r < 0) {
		pthread_mutex_unlock(&dnvm_lock);
		return refuse(td, "cannot open the engine: %s", nvmedl_strerror(r));
	}
	ncores = nvmedl_cores();
	cap = nvmedl_capacity_lbas() * DNVM_LBA;
	section = section_of(td);
	njobs = section_jobs(td, section, taken, named, ncores);
	if (ncores <= 0 || njobs > ncores) {
		pthread_mutex_unlock(&dnvm_lock);
		return refuse(td, "%d directnvm jobs run together but the engine has %d cores", njobs, ncores);
	}
	core = named_core(td, &err);
	if (err) {
		pthread_mutex_unlock(&dnvm_lock);
		return refuse(td, "core=%s is not a core number or auto", o->core);
	}
	if (core >= ncores) {
		pthread_mutex_unlock(&dnvm_lock);
		return refuse(td, "core %d does not exist (the engine has %d cores)", core, ncores);
	}
	if (core >= 0 && taken[core]) {
		pthread_mutex_unlock(&dnvm_lock);
		return refuse(td, "core %d already claimed by another job of this run", core);
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		pthread_mutex_unlock(&dnvm_lock);
		return refuse(td, "out of memory");
	}
	s->core = -1;
	if (core >= 0) {
		r = probe(td, core, o->scheduler, s, &max_req, &slice);
	} else {
		/* auto: the lowest core that no job of the section names and no process holds */
		r = 1;
		for (c = 0; c < ncores && r; c++) {
			struct nvmedl_handle *h;
			if (taken[c] || named[c])
				continue;
			h = nvmedl_create_handle_with(c, o->scheduler);
			if (!h)
				continue;
			max_req = (unsigned long long) nvmedl_get_handle(h, "max_request");
			slice = (unsigned long long) nvmedl_get_handle(h, "data_size");
			nvmedl_destroy_handle(h);
			s->core = c;
			r = 0;
		}
		if (r)
			refuse(td, "more directnvm jobs than free cores (%d jobs run together, no free core left of %d)", njobs,
			       ncores);
	}
	if (!r)
		td->io_ops_data = s; /* the core is taken for the jobs set up after this one */
	pthread_mutex_unlock(&dnvm_lock);
	if (r) {
		free(s);
		return 1;
	}

	if (check_sizes(td, max_req) || check_range(td, cap))
		goto fail;
	need = max_bs(td) * td->o.iodepth + 2 * DNVM_BLOCK;
	if (need > slice) {
		refuse(td, "iodepth %u x bs %llu needs %llu bytes of buffers, the core's data slice has %llu", td->o.iodepth,
		       max_bs(td), need, slice);
		goto fail;
	}
	return 0;
fail:
	dnvm_release(td);
	return 1;
}

void dnvm_release(struct thread_data *td)
{
	struct dnvm_thread *s = td->io_ops_data;

	if (!s)
		return;
	if (s->h)
		nvmedl_destroy_handle(s->h);
	free(s->comps);
	free(s->events);
	free(s);
	td->io_ops_data = NULL;
}
