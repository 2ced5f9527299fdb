// SPDX-License-Identifier: GPL-2.0-only
/*
 * hdu.ko's C shim: the shared helpers (the source exists once, in kernel/kshim.c) and the
 * sysfs attribute table of /sys/class/misc/hduN/. Values come from hdu_drv/mod.rs
 * (HduShared::show).
 */
#include "kshim.c" /* kernel/kshim.c, shared by both modules */
#include <linux/sysfs.h>

/* The values come from HduShared::show in hdu_drv/mod.rs, matched by name. */
DNVM_SHOW_ATTR(index);
DNVM_SHOW_ATTR(revision);
DNVM_SHOW_ATTR(engines);
DNVM_SHOW_ATTR(caps);
DNVM_SHOW_ATTR(state);
DNVM_SHOW_ATTR(errors);
DNVM_SHOW_ATTR(phys_addr);
DNVM_SHOW_ATTR(dma_window);
DNVM_SHOW_ATTR(owner);

static struct attribute *hdu_attrs[] = {
	&dev_attr_index.attr,
	&dev_attr_revision.attr,
	&dev_attr_engines.attr,
	&dev_attr_caps.attr,
	&dev_attr_state.attr,
	&dev_attr_errors.attr,
	&dev_attr_phys_addr.attr,
	&dev_attr_dma_window.attr,
	&dev_attr_owner.attr,
	NULL,
};
ATTRIBUTE_GROUPS(hdu);

const struct attribute_group **dnvm_module_groups(void)
{
	return hdu_groups;
}
