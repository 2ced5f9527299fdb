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
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
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

/* Apply the page protection of @mode to @vma. */
static int dnvm_shim_set_prot(struct vm_area_struct *vma, unsigned int mode)
{
	switch (mode) {
	case DNVM_SHIM_MAP_DEVICE:
		vma->vm_page_prot = pgprot_device(vma->vm_page_prot);
		return 0;
	case DNVM_SHIM_MAP_WC:
		vma->vm_page_prot = pgprot_writecombine(vma->vm_page_prot);
		return 0;
	case DNVM_SHIM_MAP_CACHED:
		return 0;
	default:
		return -EINVAL;
	}
}

/*
 * Fault handler of every map-on-fault VMA: the module decides (dnvm_rs_fault). The VMA holds a
 * reference to its file, so vm_file->private_data (the module's per-file state, freed only at
 * the file's release) is alive for the whole fault.
 */
static vm_fault_t dnvm_shim_fault(struct vm_fault *vmf)
{
	vm_fault_t ret = VM_FAULT_SIGBUS;

	dnvm_rs_fault(vmf->vma->vm_file->private_data, vmf, &ret);
	return ret;
}

static const struct vm_operations_struct dnvm_shim_vm_ops = {
	.fault = dnvm_shim_fault,
};

/*
 * Prepare @vma for map-on-fault with the memory type of @mode: no page is mapped here, so no
 * PTE can exist before the VMA is linked into the file's mapping tree (where RELEASE, close and
 * unbind find it with unmap_mapping_range()). VM_DONTCOPY: a fork does not inherit it.
 */
int dnvm_shim_vm_on_fault(struct vm_area_struct *vma, unsigned int mode)
{
	int ret = dnvm_shim_set_prot(vma, mode);

	if (ret)
		return ret;
	vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY);
	vma->vm_ops = &dnvm_shim_vm_ops;
	return 0;
}

/* File page offset of the faulting address. */
u64 dnvm_shim_fault_pgoff(struct vm_fault *vmf)
{
	return vmf->pgoff;
}

/*
 * Map the faulting page at @phys and up to @npages - 1 following pages (phys contiguous, within
 * the VMA) so a large buffer does not take one fault per page. Called by the module with its
 * lock held; *ret gets the result for the faulting page (VM_FAULT_NOPAGE when mapped).
 */
void dnvm_shim_fault_insert(struct vm_fault *vmf, phys_addr_t phys, unsigned long npages,
			    vm_fault_t *ret)
{
	struct vm_area_struct *vma = vmf->vma;
	unsigned long addr = vmf->address & PAGE_MASK;
	unsigned long pfn = PHYS_PFN(phys);
	unsigned long i;

	*ret = vmf_insert_pfn_prot(vma, addr, pfn, vma->vm_page_prot);
	if (*ret & VM_FAULT_ERROR)
		return;
	for (i = 1; i < npages && addr + i * PAGE_SIZE < vma->vm_end; i++)
		if (vmf_insert_pfn_prot(vma, addr + i * PAGE_SIZE, pfn + i, vma->vm_page_prot) &
		    VM_FAULT_ERROR)
			break;
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

/* dma_rmb(), for kernels whose Rust crate has no DMA barriers (kshim.rs `dma_rmb`, < 7.3). */
void dnvm_shim_dma_rmb(void)
{
	dma_rmb();
}

/*
 * Give the registered misc device @misc file operations whose .owner is this module, for
 * kernels whose Rust MiscDeviceRegistration leaves .owner NULL (< 7.3; see kshim.rs
 * `misc_set_owner`). Without an owner an open file does not pin the module, so rmmod would
 * succeed and the file's next call would run freed code.
 *
 * The copy is module-static: files keep pointing at it after the device goes, and they hold a
 * reference to this module. misc_open() reads misc->fops once (under misc_mtx, which is private
 * to misc.c) and takes the owner reference with fops_get(); an open that read the old pointer
 * in the window after misc_register() is refused by dnvm_shim_file_owned().
 */
static struct file_operations dnvm_owned_fops;
static DEFINE_MUTEX(dnvm_owned_fops_lock);

void dnvm_shim_misc_set_owner(struct miscdevice *misc)
{
	mutex_lock(&dnvm_owned_fops_lock);
	if (!dnvm_owned_fops.owner) {
		/* Every misc device of this module has the same Rust vtable (one MiscDevice type). */
		dnvm_owned_fops = *misc->fops;
		dnvm_owned_fops.owner = THIS_MODULE;
	}
	/* Publish the filled copy before misc_open() can see the pointer. */
	smp_store_release(&misc->fops, &dnvm_owned_fops);
	mutex_unlock(&dnvm_owned_fops_lock);
}

/* Whether @file was opened through file operations that pin this module. */
bool dnvm_shim_file_owned(struct file *file)
{
	return file->f_op && file->f_op->owner == THIS_MODULE;
}
