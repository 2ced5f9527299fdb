/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * C helpers shared by directnvm.ko and hdu.ko for the kernel APIs that the Rust kernel crate of
 * Linux 7.3 does not expose (reserved memory, pgprot macros, mapping zap). Each function is
 * called from exactly one Rust wrapper in kshim.rs.
 */
#ifndef DIRECTNVM_KSHIM_H
#define DIRECTNVM_KSHIM_H

#include <linux/types.h>
#include <linux/mm_types.h>

struct device;
struct vm_area_struct;
struct address_space;
struct vm_fault;
struct miscdevice;
struct file;

/* Result of dnvm_shim_rmem(): the reserved-memory region behind "memory-region" index idx. */
struct dnvm_shim_rmem {
	u64 base;
	u64 size;
	u32 no_map;
	u32 reserved;
};

/* Cache modes of dnvm_shim_vm_on_fault(). Keep in sync with kshim.rs `Cache`. */
#define DNVM_SHIM_MAP_DEVICE	0	/* Device-nGnRE, same type as ioremap(): registers */
#define DNVM_SHIM_MAP_WC	1	/* Normal non-cacheable: carve-out, matches memremap(WC) */
#define DNVM_SHIM_MAP_CACHED	2	/* Normal cacheable: only for a coherent engine path */

int dnvm_shim_rmem(struct device *dev, unsigned int idx, struct dnvm_shim_rmem *out);
void *dnvm_shim_memremap_wc(phys_addr_t phys, size_t size);
void dnvm_shim_memunmap(void *addr);
void dnvm_shim_zap_mapping(struct address_space *mapping, u64 start, u64 len);

/*
 * Map-on-fault user mappings. dnvm_shim_vm_on_fault() prepares a VMA (memory type, VM_PFNMAP,
 * no page yet); every fault calls the module's dnvm_rs_fault() with the faulting file's
 * private data, which decides under the module's own lock whether the file may still reach
 * that page and, if so, calls dnvm_shim_fault_insert() before dropping the lock. A VMA whose
 * file lost the right gets SIGBUS: *ret stays VM_FAULT_SIGBUS unless an insert happened.
 */
int dnvm_shim_vm_on_fault(struct vm_area_struct *vma, unsigned int mode);
void dnvm_rs_fault(void *file_private, struct vm_fault *vmf, vm_fault_t *ret);
u64 dnvm_shim_fault_pgoff(struct vm_fault *vmf);
void dnvm_shim_fault_insert(struct vm_fault *vmf, phys_addr_t phys, unsigned long npages,
			    vm_fault_t *ret);

int dnvm_shim_request_mem(u64 start, u64 size, const char *name);
void dnvm_shim_release_mem(u64 start, u64 size);

/* Compatibility with kernels older than 7.3 (kshim.rs "Older kernels"). */
void dnvm_shim_dma_rmb(void);
void dnvm_shim_misc_set_owner(struct miscdevice *misc);
bool dnvm_shim_file_owned(struct file *file);

/*
 * Per-module sysfs attributes on the misc class device. Each module's C shim defines
 * dnvm_module_groups() (its ATTRIBUTE_GROUPS table); every show callback calls
 * dnvm_rs_show(dev_get_drvdata(dev), attribute name, buf), which the module's Rust crate
 * defines with kshim::misc_sysfs_show!.
 */
const struct attribute_group **dnvm_module_groups(void);
ssize_t dnvm_rs_show(void *misc, const char *name, char *buf);
int dnvm_shim_add_groups(struct device *dev);

/* Define <name>_show + dev_attr_<name> forwarding to dnvm_rs_show(..., "<name>", ...). */
#define DNVM_SHOW_ATTR(_attr)							\
	static ssize_t _attr##_show(struct device *d, struct device_attribute *a, char *b) \
	{ return dnvm_rs_show(dev_get_drvdata(d), a->attr.name, b); }		\
	static DEVICE_ATTR_RO(_attr)

#endif
