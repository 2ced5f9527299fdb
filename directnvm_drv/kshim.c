// SPDX-License-Identifier: GPL-2.0-only
/*
 * Shared C shim of the DirectNVM kernel modules; see kshim.h. Not built on its own: each
 * module's shim (directnvm_drv/directnvm_shim.c, hdu_drv/hdu_shim.c) includes it and adds its
 * sysfs attribute table, so every helper exists once in the source tree.
 */
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/of.h>
#include <linux/of_reserved_mem.h>
#include <linux/ioport.h>
#include "kshim.h"

/* Resolve "memory-region" index @idx of @dev: base, size and whether the node is no-map. */
int dnvm_shim_rmem(struct device *dev, unsigned int idx, struct dnvm_shim_rmem *out)
{
	struct device_node *np;
	struct resource res;
	int ret;

	if (!dev->of_node)
		return -ENODEV;
	ret = of_reserved_mem_region_to_resource(dev->of_node, idx, &res);
	if (ret)
		return ret;
	np = of_parse_phandle(dev->of_node, "memory-region", idx);
	out->no_map = np && of_property_read_bool(np, "no-map");
	of_node_put(np);
	out->base = res.start;
	out->size = resource_size(&res);
	out->reserved = 0;
	return 0;
}

/*
 * Map [phys, phys + len) into @vma with the page protection of @mode. vm_iomap_memory() checks
 * the VMA's size and vm_pgoff against the range, so a request past its end fails with -EINVAL.
 */
int dnvm_shim_vm_iomap(struct vm_area_struct *vma, phys_addr_t phys, unsigned long len,
		       unsigned int mode)
{
	switch (mode) {
	case DNVM_SHIM_MAP_DEVICE:
		vma->vm_page_prot = pgprot_device(vma->vm_page_prot);
		break;
	case DNVM_SHIM_MAP_WC:
		vma->vm_page_prot = pgprot_writecombine(vma->vm_page_prot);
		break;
	case DNVM_SHIM_MAP_CACHED:
		break;
	default:
		return -EINVAL;
	}
	return vm_iomap_memory(vma, phys, len);
}

/*
 * Kernel write-combining alias of part of a no-map carve-out (the same memory type as the user
 * mapping, so no mismatched-attribute alias exists). NULL on failure.
 */
void *dnvm_shim_memremap_wc(phys_addr_t phys, size_t size)
{
	return memremap(phys, size, MEMREMAP_WC);
}

/* Release a mapping made by dnvm_shim_memremap_wc() before the device goes away. */
void dnvm_shim_memunmap(void *addr)
{
	memunmap(addr);
}

/*
 * Zap the user mappings of bytes [start, start + len) (len 0: to the end) of an address space,
 * i.e. of every mmap of one device node's inode at those file offsets.
 */
void dnvm_shim_zap_mapping(struct address_space *mapping, u64 start, u64 len)
{
	unmap_mapping_range(mapping, start, len, 1);
}

/*
 * Claim [start, start + size) in iomem_resource for this driver. The Rust kernel crate's
 * ExclusiveIoMem of 7.3 requests the region under the device's own resource but releases it
 * from iomem_resource, which leaks the claim when the platform resource is not in the tree
 * (the case for these DT nodes) and makes every re-probe fail with -EBUSY. Request and release
 * here both use iomem_resource. Returns 0 or -EBUSY.
 */
int dnvm_shim_request_mem(u64 start, u64 size, const char *name)
{
	return request_mem_region(start, size, name) ? 0 : -EBUSY;
}

/* Undo dnvm_shim_request_mem(). */
void dnvm_shim_release_mem(u64 start, u64 size)
{
	release_mem_region(start, size);
}

/* Add this module's attribute groups to @dev (the misc class device); removed with it. */
int dnvm_shim_add_groups(struct device *dev)
{
	return device_add_groups(dev, dnvm_module_groups());
}
