// SPDX-License-Identifier: GPL-2.0-only
/*
 * Engine options of the directnvm ioengine. Values are range-checked by fio's own parser
 * (minval/maxval); names fio does not know are refused by fio ("Bad option <name>").
 */
#include "dnvm.h"

struct fio_option dnvm_options[] = {
	{
		.name = "core",
		.lname = "DirectNVM core",
		.type = FIO_OPT_STR_STORE,
		.off1 = offsetof(struct dnvm_options, core),
		.def = "auto",
		.help = "Core (HDU) of the job's handle: a number, or auto (the job's CPU affinity, else the next free core)",
		.category = FIO_OPT_C_ENGINE,
		.group = FIO_OPT_G_INVALID,
	},
	{
		.name = "priority",
		.lname = "DirectNVM urgency class",
		.type = FIO_OPT_INT,
		.off1 = offsetof(struct dnvm_options, priority),
		.minval = 0,
		.maxval = 3,
		.def = "0",
		.help = "Urgency class of the job's I/O: 0 urgent .. 3 low (routed per request on rev 2)",
		.category = FIO_OPT_C_ENGINE,
		.group = FIO_OPT_G_INVALID,
	},
	{
		.name = "scheduler",
		.lname = "DirectNVM level-1 scheduler",
		.type = FIO_OPT_STR_STORE,
		.off1 = offsetof(struct dnvm_options, scheduler),
		.def = "fifo",
		.help = "Software staging-queue scheduler: fifo or priority",
		.category = FIO_OPT_C_ENGINE,
		.group = FIO_OPT_G_INVALID,
	},
	{
		.name = "batch",
		.lname = "DirectNVM batch",
		.type = FIO_OPT_INT,
		.off1 = offsetof(struct dnvm_options, batch),
		.minval = 1,
		.maxval = 1024,
		.def = "1",
		.help = "Staged requests that start an HDU batch (1: start as soon as the HDU is idle)",
		.category = FIO_OPT_C_ENGINE,
		.group = FIO_OPT_G_INVALID,
	},
	{
		.name = NULL,
	},
};
