/* Generated from kernel/abi (directnvm-abi) by scripts/gen-headers.sh. Do not edit. */
/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * DirectNVM kernel ABI: the ioctls, structs and mmap layout of /dev/directnvm and /dev/hduN,
 * and the staging-entry and register layout of the HDU (docs/hardware.md explains each number).
 */
#ifndef DIRECTNVM_ABI_H
#define DIRECTNVM_ABI_H

#include <stdint.h>

/*
 Version of the ioctl ABI described in this file. Bumped on any incompatible change.
 */
#define DNVM_ABI_VERSION 1

/*
 Size of one register page and the mmap granule this ABI assumes (4 KiB).
 */
#define DNVM_PAGE_SIZE 4096

/*
 Logical block size the engines address, in bytes (the RTL hard-codes 512-byte LBAs).
 */
#define DNVM_LBA_SIZE 512

/*
 Bytes moved by one rev 1 command (fixed at synthesis in the RTL).
 */
#define DNVM_REV1_BLOCK_SIZE 4096

/*
 Largest NREQS a rev 1 HDU handles safely from a 4 KiB-aligned staging queue: entry 171 makes
 the sixth 768-byte fetch burst cross a 4 KiB boundary (an AXI4 protocol violation).
 */
#define DNVM_REV1_MAX_NREQS 170

/*
 Commands a rev 1 engine keeps in flight per sub-batch (32-entry SQ minus one).
 */
#define DNVM_REV1_SUBBATCH 31

/*
 Maximum number of HDUs (cores) one engine node may describe.
 */
#define DNVM_MAX_CORES 8

/*
 Maximum number of engines (urgency classes) per HDU.
 */
#define DNVM_MAX_ENGINES 4

/*
 Number of NVMe urgency classes (urgent, high, medium, low).
 */
#define DNVM_URGENCY_CLASSES 4

/*
 START: write 1 to start a batch (one-cycle pulse; lost if the HDU is busy).
 */
#define HDU_REG_START 0

/*
 NREQS: number of 24-byte entries the next START fetches (low 32 bits used).
 */
#define HDU_REG_NREQS 8

/*
 REQBUF: bus address of the staging array; must be written with one 64-bit store.
 */
#define HDU_REG_REQBUF 16

/*
 STATUSBUF (rev 2): bus address of the status-word array (one u32 per entry).
 In rev 1 this slot is a write-only scratch register that drives nothing.
 */
#define HDU_REG_STATUSBUF 24

/*
 DONE: bit 0 is 1 once every entry of the last batch completed; cleared by the next START.
 */
#define HDU_REG_DONE 32

/*
 ID (rev 2): `HDU_ID_MAGIC` in bits 31:0, revision in bits 47:32. Rev 1 reads 0.
 */
#define HDU_REG_ID 40

/*
 CAPS (rev 2): capability word, see the `HDU_CAPS_*` accessors. Rev 1 reads 0.
 */
#define HDU_REG_CAPS 48

/*
 ERRORS (rev 2): number of entries completed with a non-zero status since reset.
 */
#define HDU_REG_ERRORS 56

/*
 Bytes of the user register block (the page is 4 KiB; the block aliases within it in rev 1).
 */
#define HDU_USER_REGS_SIZE 64

/*
 DONE register bit: batch complete.
 */
#define HDU_DONE_BIT (1 << 0)

/*
 DONE register bit (rev 2): the engine is executing a batch.
 */
#define HDU_BUSY_BIT (1 << 1)

/*
 DONE register bit (rev 2 with `HduCaps::start_queue` > 0): a START is queued behind the
 running batch, so the next START would be lost. Only the device clears it, so software that
 reads it as 0 knows its next START will be accepted.
 */
#define HDU_QUEUED_BIT (1 << 2)

/*
 START value that starts a batch.
 */
#define HDU_START_GO 1

/*
 Magic in the low half of the rev 2 ID register ("DNVM" little-endian).
 */
#define HDU_ID_MAGIC 1297501764

/*
 Revision 1: the published RTL exactly.
 */
#define HDU_REV1 1

/*
 Revision 2: per-request status, urgency routing, privileged page.
 */
#define HDU_REV2 2

/*
 CTRL: write `HDU_CTRL_RESET` to abort the batch, clear DONE, the FIFO and the counters.
 */
#define HDU_PRIV_CTRL 0

/*
 DMA_BASE: lowest bus address entries may reference (staging, status and data).
 */
#define HDU_PRIV_DMA_BASE 8

/*
 DMA_LIMIT: one past the highest bus address entries may reference; 0 disables the HDU.
 */
#define HDU_PRIV_DMA_LIMIT 16

/*
 PSTATUS: bit 0 reset in progress, bit 1 window violation seen since reset.
 */
#define HDU_PRIV_STATUS 24

/*
 Bytes of the privileged register block.
 */
#define HDU_PRIV_REGS_SIZE 32

/*
 CTRL bit: reset the engine (self-clearing).
 */
#define HDU_CTRL_RESET (1 << 0)

/*
 PSTATUS bit: reset still in progress.
 */
#define HDU_PSTATUS_RESETTING (1 << 0)

/*
 PSTATUS bit: a request violated the DMA window since the last reset.
 */
#define HDU_PSTATUS_WINDOW_FAULT (1 << 1)

/*
 CTRL bit (with `HDU_CTRL_RESET`): also return the engines' SQ tail, CQ head and phase to the
 state of freshly created I/O queues and zero the CQ rings. Use it after (re)creating the
 engines' NVMe I/O queue pairs; a plain reset keeps the queue pointers.
 */
#define HDU_CTRL_QRESET (1 << 1)

/*
 PSTATUS bit: a START was rejected as a whole (NREQS above `max_nreqs`, or a REQBUF/STATUSBUF
 that is misaligned or outside the DMA window) since the last reset.
 */
#define HDU_PSTATUS_BAD_BATCH (1 << 2)

/*
 Size of one staging entry in bytes.
 */
#define DNVM_ENTRY_SIZE 24

/*
 Read from the SSD into the data buffer.
 */
#define DNVM_OP_READ 0

/*
 Write the data buffer to the SSD.
 */
#define DNVM_OP_WRITE 1

/*
 Flush the volatile write cache (rev 2 only; a rev 1 engine would issue a read).
 */
#define DNVM_OP_FLUSH 2

/*
 Urgency class: urgent (served before every WRR class).
 */
#define DNVM_URGENCY_URGENT 0

/*
 Urgency class: high.
 */
#define DNVM_URGENCY_HIGH 1

/*
 Urgency class: medium.
 */
#define DNVM_URGENCY_MEDIUM 2

/*
 Urgency class: low.
 */
#define DNVM_URGENCY_LOW 3

/*
 Status word (rev 2), one little-endian u32 per entry at STATUSBUF + 4*i.
 Bit 0: done. Bits 15:1: the NVMe status field of the CQE (DW3 bits 31:17: SC 8:1,
 SCT 11:9, CRD 13:12, M 14, DNR 15). Bits 23:16: HDU error code (`DNVM_HDU_ERR_*`).
 */
#define DNVM_STATUS_DONE (1 << 0)

/*
 Shift of the NVMe status field inside the status word.
 */
#define DNVM_STATUS_NVME_SHIFT 1

/*
 Mask of the NVMe status field (after shifting).
 */
#define DNVM_STATUS_NVME_MASK 32767

/*
 Shift of the HDU error code inside the status word.
 */
#define DNVM_STATUS_HDU_SHIFT 16

/*
 No HDU-level error.
 */
#define DNVM_HDU_ERR_NONE 0

/*
 An address of the entry lies outside the DMA window; no data moved.
 */
#define DNVM_HDU_ERR_WINDOW 1

/*
 The entry was aborted by an engine reset.
 */
#define DNVM_HDU_ERR_ABORTED 2

/*
 The entry is malformed (unknown op, bad block size, misaligned buffer).
 */
#define DNVM_HDU_ERR_INVALID 3

/*
 The NVMe controller did not complete the command in time.
 */
#define DNVM_HDU_ERR_TIMEOUT 4

/*
 Bytes of queue-window memory per engine queue; queue q (= QID - 1) starts at q * this.
 */
#define DNVM_QWIN_QUEUE_STRIDE 131072

/*
 Offset of the I/O submission queue inside a queue's memory.
 */
#define DNVM_QWIN_SQ_OFFSET 0

/*
 Offset of the PRP lists the rev 2 engine builds (one slot per command tag).
 */
#define DNVM_QWIN_PRP_OFFSET 32768

/*
 Bytes reserved for PRP lists per queue.
 */
#define DNVM_QWIN_PRP_SIZE 32768

/*
 Offset of the I/O completion queue inside a queue's memory.
 */
#define DNVM_QWIN_CQ_OFFSET 65536

/*
 Guest-physical address of the mailbox page (PL window, outside the carve-out).
 */
#define TESTDEV_MAILBOX_PHYS 2134900736

/*
 Offset of the u32 magic the model writes when it is up (`TESTDEV_MAGIC`).
 */
#define TESTDEV_REG_MAGIC 0

/*
 Offset of the u32 mailbox layout version (`TESTDEV_VERSION`).
 */
#define TESTDEV_REG_VERSION 4

/*
 Offset of the u32 request sequence number, written last by the guest.
 */
#define TESTDEV_REG_REQ_SEQ 8

/*
 Offset of the u32 acknowledge sequence number, written last by the model.
 */
#define TESTDEV_REG_ACK_SEQ 12

/*
 Offset of the u32 command code (`TESTDEV_CMD_*`).
 */
#define TESTDEV_REG_CMD 16

/*
 Offset of the u32 command status (`TESTDEV_STATUS_*`), valid once ACK_SEQ == REQ_SEQ.
 */
#define TESTDEV_REG_STATUS 20

/*
 Offset of the argument array: `TESTDEV_NARGS` u64 values.
 */
#define TESTDEV_REG_ARGS 24

/*
 Number of u64 arguments.
 */
#define TESTDEV_NARGS 8

/*
 Offset of the result array: `TESTDEV_NRESULTS` u64 values.
 */
#define TESTDEV_REG_RESULT 256

/*
 Number of u64 results.
 */
#define TESTDEV_NRESULTS 64

/*
 Mailbox magic ("DNVT" little-endian).
 */
#define TESTDEV_MAGIC 1414942276

/*
 Mailbox layout version.
 */
#define TESTDEV_VERSION 1

/*
 Command: do nothing, answer `TESTDEV_STATUS_OK` (liveness check).
 */
#define TESTDEV_CMD_PING 1

/*
 Command: remove every injected fault.
 */
#define TESTDEV_CMD_CLEAR_FAULTS 2

/*
 Command: inject a fault; ARGS[0] = `TESTDEV_FAULT_*`, ARGS[1..] as documented per kind.
 */
#define TESTDEV_CMD_SET_FAULT 3

/*
 Command: statistics of HDU ARGS[0] (RESULT[`TESTDEV_STAT_*`]).
 */
#define TESTDEV_CMD_GET_STATS 4

/*
 Command: stop servicing HDUs and the controller (the mailbox stays live).
 */
#define TESTDEV_CMD_QUIESCE 5

/*
 Command: resume after `TESTDEV_CMD_QUIESCE`.
 */
#define TESTDEV_CMD_RESUME 6

/*
 Command: restart the whole device as after a power cycle (FPGA reconfigured, SSD power
 cycled): every HDU, engine and controller register back to its power-on value, queues and
 commands in flight lost, injected faults and counters cleared; the namespace data that
 completed writes stored survives. Software must bring the controller up again.
 */
#define TESTDEV_CMD_RESTART 7

/*
 Status: the command succeeded.
 */
#define TESTDEV_STATUS_OK 0

/*
 Status: unknown command code.
 */
#define TESTDEV_STATUS_BAD_CMD 1

/*
 Status: an argument is out of range.
 */
#define TESTDEV_STATUS_BAD_ARG 2

/*
 Fault: NVMe I/O commands touching LBAs [ARGS[1], ARGS[2]) complete with NVMe status field
 ARGS[3] (SC | SCT << 8 | DNR << 14) and move no data; ARGS[4] = opcode or 0xff for any;
 ARGS[5] = number of hits before the fault disarms, 0 = forever.
 */
#define TESTDEV_FAULT_IO_ERROR 1

/*
 Fault: the next ARGS[2] STARTs on HDU ARGS[1] are dropped as if the HDU were busy.
 */
#define TESTDEV_FAULT_DROP_START 2

/*
 Fault: HDU ARGS[1] never sets DONE (ARGS[2] = 1 on, 0 off) until cleared or reset.
 */
#define TESTDEV_FAULT_STUCK 3

/*
 Fault: every SSD time is multiplied by ARGS[1] / 1000.
 */
#define TESTDEV_FAULT_SLOW 4

/*
 Fault (rev 2): the next ARGS[2] entries fetched by HDU ARGS[1] fail the DMA window check.
 */
#define TESTDEV_FAULT_WINDOW 5

/*
 RESULT index: STARTs accepted.
 */
#define TESTDEV_STAT_STARTS 0

/*
 RESULT index: STARTs dropped (busy or injected).
 */
#define TESTDEV_STAT_DROPPED_STARTS 1

/*
 RESULT index: batches that signalled DONE.
 */
#define TESTDEV_STAT_BATCHES 2

/*
 RESULT index: entries executed or failed.
 */
#define TESTDEV_STAT_ENTRIES 3

/*
 RESULT index: SQ tail doorbells written by the HDU's engines.
 */
#define TESTDEV_STAT_SQ_DOORBELLS 4

/*
 RESULT index: CQ head doorbells written by the HDU's engines.
 */
#define TESTDEV_STAT_CQ_DOORBELLS 5

/*
 RESULT index: staging fetch bursts that crossed a 4 KiB boundary (rev 1 NREQS >= 171).
 */
#define TESTDEV_STAT_PROTOCOL_VIOLATIONS 6

/*
 RESULT index: entries completed with a non-zero status (rev 2).
 */
#define TESTDEV_STAT_ERRORS 7

/*
 RESULT index: DMA window violations (rev 2).
 */
#define TESTDEV_STAT_WINDOW_FAULTS 8

/*
 RESULT index: entries aborted by a reset (rev 2).
 */
#define TESTDEV_STAT_ABORTED 9

/*
 RESULT index: NVMe I/O commands completed by the controller (whole device).
 */
#define TESTDEV_STAT_IO_COMMANDS 10

/*
 RESULT index: NVMe I/O commands completed with an error (whole device).
 */
#define TESTDEV_STAT_IO_ERRORS 11

/*
 RESULT index: NVMe admin commands completed (whole device).
 */
#define TESTDEV_STAT_ADMIN_COMMANDS 12

/*
 RESULT index: bytes read from the SSD (whole device).
 */
#define TESTDEV_STAT_BYTES_READ 13

/*
 RESULT index: bytes written to the SSD (whole device).
 */
#define TESTDEV_STAT_BYTES_WRITTEN 14

/*
 Number of RESULT slots GET_STATS fills.
 */
#define TESTDEV_STAT_COUNT 15

/*
 ioctl direction: none.
 */
#define DNVM_IOC_NONE 0

/*
 ioctl direction: userspace writes (kernel reads).
 */
#define DNVM_IOC_WRITE 1

/*
 ioctl direction: userspace reads (kernel writes).
 */
#define DNVM_IOC_READ 2

/*
 Type byte of the `/dev/directnvm` ioctls.
 */
#define DNVM_IOC_MAGIC 219

/*
 Type byte of the `/dev/hduN` ioctls.
 */
#define HDU_IOC_MAGIC 220

/*
 `DnvmInfo::flags`: the NVMe controller is up and the I/O queues exist.
 */
#define DNVM_INFO_READY (1 << 0)

/*
 `DnvmInfo::flags`: the controller arbitrates with weighted round robin + urgent class.
 */
#define DNVM_INFO_WRR (1 << 1)

/*
 `DnvmInfo::flags`: staging/data regions are mapped cached (the DT declared a coherent path).
 */
#define DNVM_INFO_COHERENT (1 << 2)

/*
 `DnvmInfo::flags`: a core has been claimed since the I/O queues were last created, so the
 engines may have advanced their queue pointers. Re-creating the queues then needs an engine
 queue reset (`HDU_IOC_RESET_QUEUES`, rev 2); rev 1 engines cannot follow (docs/hardware.md §6).
 */
#define DNVM_INFO_QUEUES_USED (1 << 3)

/*
 Region kinds reported by `DNVM_IOC_GET_LAYOUT`.
 */
#define DNVM_REGION_ADMIN 0

/*
 Per-core staging queue (24-byte entries).
 */
#define DNVM_REGION_STAGING 1

/*
 Per-core status-word array (rev 2; present but unused on rev 1).
 */
#define DNVM_REGION_STATUS 2

/*
 Per-core data buffers.
 */
#define DNVM_REGION_DATA 3

/*
 Cache mode of a region mapping: write-combining (Normal non-cacheable on arm64).
 */
#define DNVM_CACHE_WC 0

/*
 Cache mode: cached (only when the DT declares the engine path coherent).
 */
#define DNVM_CACHE_CACHED 1

/*
 Cache mode: not mappable by userspace (kernel-only region).
 */
#define DNVM_CACHE_NONE 2

/*
 `DnvmRegion::core` of regions that belong to no core.
 */
#define DNVM_NO_CORE 4294967295

/*
 Most regions one layout reports.
 */
#define DNVM_MAX_REGIONS (1 + (3 * DNVM_MAX_CORES))

/*
 Highest `/dev/hduN` ioctl number (a known number with a wrong size is EINVAL).
 */
#define HDU_IOC_MAX_NR 4

/*
 Default of `DT_PROP_ENGINES_PER_HDU` (the published RTL).
 */
#define DT_DEFAULT_ENGINES_PER_HDU 1

/*
 Default of `DT_PROP_STAGING_ENTRIES`: the most a rev 1 HDU fetches safely.
 */
#define DT_DEFAULT_STAGING_ENTRIES DNVM_REV1_MAX_NREQS

/*
 Largest `DT_PROP_STAGING_ENTRIES`: NREQS per START is a 16-bit field of CAPS.
 */
#define DNVM_MAX_STAGING_ENTRIES 65535

/*
 Default of `DT_PROP_IO_QUEUE_DEPTH` (the published RTL).
 */
#define DT_DEFAULT_IO_QUEUE_DEPTH 32

/*
 One request in a staging queue, exactly as the HDU fetches it (three 64-bit beats).
 */
struct dnvm_entry {
  /*
   Operation: `DNVM_OP_READ`, `DNVM_OP_WRITE` (rev 1 uses bit 0 only), `DNVM_OP_FLUSH` (rev 2).
   */
  uint16_t op;
  /*
   Urgency class 0 urgent, 1 high, 2 medium, 3 low (rev 2 routes by it; rev 1 ignores it).
   */
  uint16_t urgency;
  /*
   Transfer size in bytes (rev 2: multiple of 4096, 0 means 4096; rev 1 ignores it).
   */
  uint32_t block_size;
  /*
   Bus address of the data buffer, 4 KiB aligned.
   */
  uint64_t data_addr;
  /*
   Starting LBA in 512-byte units.
   */
  uint64_t lba;
};

/*
 Reply of `DNVM_IOC_GET_INFO`.
 */
struct dnvm_info {
  /*
   `DNVM_ABI_VERSION` of the driver.
   */
  uint32_t abi_version;
  /*
   Reserved, 0 (the HDU revision is read from each HDU: `HDU_IOC_GET_INFO`).
   */
  uint32_t reserved;
  /*
   Number of cores (HDUs) with a staging queue.
   */
  uint32_t cores;
  /*
   Engines per HDU.
   */
  uint32_t engines;
  /*
   Entries per staging queue.
   */
  uint32_t staging_entries;
  /*
   NVMe I/O queue depth of each engine.
   */
  uint32_t io_queue_depth;
  /*
   Namespace LBA size in bytes.
   */
  uint32_t lba_size;
  /*
   Largest transfer per entry in bytes.
   */
  uint32_t max_transfer;
  /*
   Namespace capacity in LBAs (0 until the controller is up).
   */
  uint64_t capacity_lbas;
  /*
   Physical base of the reserved-memory carve-out.
   */
  uint64_t carveout_phys;
  /*
   Size of the carve-out in bytes.
   */
  uint64_t carveout_size;
  /*
   `DNVM_INFO_*` flags.
   */
  uint32_t flags;
  /*
   NVMe VS register of the controller (0 until up).
   */
  uint32_t nvme_version;
  /*
   Controller serial number (ASCII, space padded, from Identify).
   */
  uint8_t serial[20];
  /*
   Controller model number (ASCII, space padded).
   */
  uint8_t model[40];
  /*
   Firmware revision (ASCII).
   */
  uint8_t firmware[8];
  /*
   Arbitration: burst (log2), high, medium, low weights currently programmed.
   */
  uint8_t arbitration[4];
};

/*
 One region of the carve-out. `offset` is also the mmap offset on /dev/directnvm.
 */
struct dnvm_region {
  /*
   Byte offset inside the carve-out (page aligned); pass it as the mmap offset.
   */
  uint64_t offset;
  /*
   Physical (bus) address of the region, as the engines see it.
   */
  uint64_t phys;
  /*
   Size in bytes (page multiple).
   */
  uint64_t size;
  /*
   `DNVM_REGION_*`.
   */
  uint32_t kind;
  /*
   Owning core, or `DNVM_NO_CORE`.
   */
  uint32_t core;
  /*
   `DNVM_CACHE_*` mode of a userspace mapping.
   */
  uint32_t cache;
  /*
   Reserved, 0.
   */
  uint32_t reserved;
};

/*
 Reply of `DNVM_IOC_GET_LAYOUT`.
 */
struct dnvm_layout {
  /*
   Number of valid entries in `regions`.
   */
  uint32_t count;
  /*
   Reserved, 0.
   */
  uint32_t reserved;
  /*
   The regions, in offset order.
   */
  struct dnvm_region regions[DNVM_MAX_REGIONS];
};

/*
 Argument of `DNVM_IOC_CLAIM` and `DNVM_IOC_RELEASE`.
 */
struct dnvm_claim {
  /*
   Core index, 0..cores.
   */
  uint32_t core;
  /*
   Reserved, must be 0.
   */
  uint32_t flags;
};

/*
 Argument of `DNVM_IOC_SET_ARBITRATION` (NVMe Set Features, Arbitration).
 */
struct dnvm_arbitration {
  /*
   Arbitration burst, log2 of commands (0..6, 7 = unlimited).
   */
  uint32_t burst;
  /*
   High-priority weight minus one (0..255).
   */
  uint32_t high;
  /*
   Medium-priority weight minus one.
   */
  uint32_t medium;
  /*
   Low-priority weight minus one.
   */
  uint32_t low;
};

/*
 Reply of `DNVM_IOC_GET_STATS`.
 */
struct dnvm_stats {
  /*
   Admin commands submitted since load.
   */
  uint64_t admin_commands;
  /*
   Admin commands that completed with an error or timed out.
   */
  uint64_t admin_errors;
  /*
   Successful claims since load.
   */
  uint64_t claims;
  /*
   Successful mmaps since load.
   */
  uint64_t mmaps;
  /*
   Controller (re)initialisations since load.
   */
  uint64_t controller_inits;
  /*
   Bitmask of cores currently claimed.
   */
  uint64_t claimed_mask;
};

/*
 Reply of `HDU_IOC_GET_INFO`.
 */
struct hdu_info {
  /*
   `DNVM_ABI_VERSION` of the driver.
   */
  uint32_t abi_version;
  /*
   Instance index N of /dev/hduN.
   */
  uint32_t index;
  /*
   Detected revision (1 or 2).
   */
  uint32_t revision;
  /*
   Engines behind this HDU.
   */
  uint32_t engines;
  /*
   Raw CAPS register (rev 1: `HduCaps::REV1` packed).
   */
  uint64_t caps;
  /*
   Physical address of the user register page.
   */
  uint64_t user_phys;
  /*
   Physical address of the privileged page (0 if none).
   */
  uint64_t priv_phys;
  /*
   DMA window base programmed at probe (rev 2; 0 on rev 1).
   */
  uint64_t dma_base;
  /*
   DMA window limit, exclusive (rev 2; 0 on rev 1).
   */
  uint64_t dma_limit;
};

/*
 Reply of `HDU_IOC_GET_STATS`.
 */
struct hdu_stats {
  /*
   Opens of /dev/hduN since probe.
   */
  uint64_t opens;
  /*
   Successful mmaps since probe.
   */
  uint64_t mmaps;
  /*
   Engine resets since probe.
   */
  uint64_t resets;
  /*
   ERRORS register at the time of the call (rev 2; 0 on rev 1).
   */
  uint64_t errors;
  /*
   DONE register at the time of the call.
   */
  uint64_t done;
};

/*
 Capabilities of an HDU, packed in `HDU_REG_CAPS`.

 Bits: 3:0 engines (urgency classes served), 7:4 STARTs held behind the running batch,
 15:8 log2 of the I/O queue depth per engine, 31:16 max NREQS per START, 47:32 dispatch FIFO
 depth, 63:48 max transfer in 4 KiB pages.
 */
struct hdu_caps {
  /*
   Engines behind this HDU (1, 2 or 4).
   */
  uint32_t engines;
  /*
   log2 of each engine's NVMe I/O queue depth.
   */
  uint32_t queue_depth_log2;
  /*
   Largest NREQS one START accepts.
   */
  uint32_t max_nreqs;
  /*
   Entries in the dispatch FIFO between HDU and engines.
   */
  uint32_t dispatch_depth;
  /*
   Largest transfer of one entry, in 4 KiB pages.
   */
  uint32_t max_xfer_pages;
  /*
   STARTs the HDU accepts while a batch runs (0: a START while busy is lost, as in rev 1;
   1: one batch can wait behind the running one, `HDU_QUEUED_BIT` tells when it does).
   */
  uint32_t start_queue;
};
/*
 Capabilities of a rev 1 HDU (fixed at synthesis; the register reads 0).
 */
#define hdu_caps_REV1 (hdu_caps){ .engines = 1, .queue_depth_log2 = 5, .max_nreqs = DNVM_REV1_MAX_NREQS, .dispatch_depth = 64, .max_xfer_pages = 1, .start_queue = 0 }











/* ioctl numbers (asm-generic encoding), from DNVM_IOCTLS in kernel/abi/ioctl.rs */
#define DNVM_IOC_GET_INFO 0x8088db01u
#define DNVM_IOC_GET_LAYOUT 0x83f0db02u
#define DNVM_IOC_CLAIM 0x4008db03u
#define DNVM_IOC_RELEASE 0x4008db04u
#define DNVM_IOC_CONTROLLER_INIT 0x0000db05u
#define DNVM_IOC_SET_ARBITRATION 0x4010db06u
#define DNVM_IOC_GET_STATS 0x8030db07u
#define HDU_IOC_GET_INFO 0x8038dc01u
#define HDU_IOC_RESET 0x0000dc02u
#define HDU_IOC_GET_STATS 0x8028dc03u
#define HDU_IOC_RESET_QUEUES 0x0000dc04u

/* The structs as the kernel sees them. */
_Static_assert(sizeof(struct dnvm_entry) == 24, "struct dnvm_entry differs from the kernel ABI");
_Static_assert(sizeof(struct dnvm_info) == 136, "struct dnvm_info differs from the kernel ABI");
_Static_assert(sizeof(struct dnvm_region) == 40, "struct dnvm_region differs from the kernel ABI");
_Static_assert(sizeof(struct dnvm_layout) == 1008, "struct dnvm_layout differs from the kernel ABI");
_Static_assert(sizeof(struct dnvm_claim) == 8, "struct dnvm_claim differs from the kernel ABI");
_Static_assert(sizeof(struct dnvm_arbitration) == 16, "struct dnvm_arbitration differs from the kernel ABI");
_Static_assert(sizeof(struct dnvm_stats) == 48, "struct dnvm_stats differs from the kernel ABI");
_Static_assert(sizeof(struct hdu_info) == 56, "struct hdu_info differs from the kernel ABI");
_Static_assert(sizeof(struct hdu_stats) == 40, "struct hdu_stats differs from the kernel ABI");
_Static_assert(sizeof(struct hdu_caps) == 24, "struct hdu_caps differs from the kernel ABI");

#endif /* DIRECTNVM_ABI_H */
