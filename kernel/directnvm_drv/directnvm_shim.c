// SPDX-License-Identifier: GPL-2.0-only
/*
 * directnvm.ko's C shim: the shared helpers (kshim.c) and the sysfs attribute table of
 * /sys/class/misc/directnvm/. Values come from DevNode::show in directnvm_drv/mod.rs, by name.
 */
#include "kshim.c" /* kernel/kshim.c, shared by both modules */
#include <linux/sysfs.h>

DNVM_SHOW_ATTR(cores);
DNVM_SHOW_ATTR(engines);
DNVM_SHOW_ATTR(ready);
DNVM_SHOW_ATTR(capacity_lbas);
DNVM_SHOW_ATTR(carveout);
DNVM_SHOW_ATTR(claimed);
DNVM_SHOW_ATTR(last_error);

static struct attribute *directnvm_attrs[] = {
	&dev_attr_cores.attr,
	&dev_attr_engines.attr,
	&dev_attr_ready.attr,
	&dev_attr_capacity_lbas.attr,
	&dev_attr_carveout.attr,
	&dev_attr_claimed.attr,
	&dev_attr_last_error.attr,
	NULL,
};
ATTRIBUTE_GROUPS(directnvm);

const struct attribute_group **dnvm_module_groups(void)
{
	return directnvm_groups;
}
