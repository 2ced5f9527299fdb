// SPDX-License-Identifier: MIT OR Apache-2.0
//! The test mailbox of the fake HDU device (QEMU board only).

// ----------------------------------------------------------------------------------------------
// Test mailbox of the fake HDU device (QEMU board only; absent on hardware). One 4 KiB page a
// guest test maps through /dev/mem. Protocol: fill CMD and ARGS, then store REQ_SEQ = ACK_SEQ + 1;
// the model executes the command, writes STATUS and RESULT, then stores ACK_SEQ = REQ_SEQ.
// ----------------------------------------------------------------------------------------------

/// Guest-physical address of the mailbox page (PL window, outside the carve-out).
pub const TESTDEV_MAILBOX_PHYS: u64 = 0x7f40_0000;
/// Offset of the u32 magic the model writes when it is up (`TESTDEV_MAGIC`).
pub const TESTDEV_REG_MAGIC: usize = 0x00;
/// Offset of the u32 mailbox layout version (`TESTDEV_VERSION`).
pub const TESTDEV_REG_VERSION: usize = 0x04;
/// Offset of the u32 request sequence number, written last by the guest.
pub const TESTDEV_REG_REQ_SEQ: usize = 0x08;
/// Offset of the u32 acknowledge sequence number, written last by the model.
pub const TESTDEV_REG_ACK_SEQ: usize = 0x0c;
/// Offset of the u32 command code (`TESTDEV_CMD_*`).
pub const TESTDEV_REG_CMD: usize = 0x10;
/// Offset of the u32 command status (`TESTDEV_STATUS_*`), valid once ACK_SEQ == REQ_SEQ.
pub const TESTDEV_REG_STATUS: usize = 0x14;
/// Offset of the argument array: `TESTDEV_NARGS` u64 values.
pub const TESTDEV_REG_ARGS: usize = 0x18;
/// Number of u64 arguments.
pub const TESTDEV_NARGS: usize = 8;
/// Offset of the result array: `TESTDEV_NRESULTS` u64 values.
pub const TESTDEV_REG_RESULT: usize = 0x100;
/// Number of u64 results.
pub const TESTDEV_NRESULTS: usize = 64;
/// Mailbox magic ("DNVT" little-endian).
pub const TESTDEV_MAGIC: u32 = 0x5456_4E44;
/// Mailbox layout version.
pub const TESTDEV_VERSION: u32 = 1;

/// Command: do nothing, answer `TESTDEV_STATUS_OK` (liveness check).
pub const TESTDEV_CMD_PING: u32 = 1;
/// Command: remove every injected fault.
pub const TESTDEV_CMD_CLEAR_FAULTS: u32 = 2;
/// Command: inject a fault; ARGS[0] = `TESTDEV_FAULT_*`, ARGS[1..] as documented per kind.
pub const TESTDEV_CMD_SET_FAULT: u32 = 3;
/// Command: statistics of HDU ARGS[0] (RESULT[`TESTDEV_STAT_*`]).
pub const TESTDEV_CMD_GET_STATS: u32 = 4;
/// Command: stop servicing HDUs and the controller (the mailbox stays live).
pub const TESTDEV_CMD_QUIESCE: u32 = 5;
/// Command: resume after `TESTDEV_CMD_QUIESCE`.
pub const TESTDEV_CMD_RESUME: u32 = 6;
/// Command: restart the whole device as after a power cycle (FPGA reconfigured, SSD power
/// cycled): every HDU, engine and controller register back to its power-on value, queues and
/// commands in flight lost, injected faults and counters cleared; the namespace data that
/// completed writes stored survives. Software must bring the controller up again.
pub const TESTDEV_CMD_RESTART: u32 = 7;

/// Status: the command succeeded.
pub const TESTDEV_STATUS_OK: u32 = 0;
/// Status: unknown command code.
pub const TESTDEV_STATUS_BAD_CMD: u32 = 1;
/// Status: an argument is out of range.
pub const TESTDEV_STATUS_BAD_ARG: u32 = 2;

/// Fault: NVMe I/O commands touching LBAs [ARGS[1], ARGS[2]) complete with NVMe status field
/// ARGS[3] (SC | SCT << 8 | DNR << 14) and move no data; ARGS[4] = opcode or 0xff for any;
/// ARGS[5] = number of hits before the fault disarms, 0 = forever.
pub const TESTDEV_FAULT_IO_ERROR: u64 = 1;
/// Fault: the next ARGS[2] STARTs on HDU ARGS[1] are dropped as if the HDU were busy.
pub const TESTDEV_FAULT_DROP_START: u64 = 2;
/// Fault: HDU ARGS[1] never sets DONE (ARGS[2] = 1 on, 0 off) until cleared or reset.
pub const TESTDEV_FAULT_STUCK: u64 = 3;
/// Fault: every SSD time is multiplied by ARGS[1] / 1000.
pub const TESTDEV_FAULT_SLOW: u64 = 4;
/// Fault (rev 2): the next ARGS[2] entries fetched by HDU ARGS[1] fail the DMA window check.
pub const TESTDEV_FAULT_WINDOW: u64 = 5;

/// RESULT index: STARTs accepted.
pub const TESTDEV_STAT_STARTS: usize = 0;
/// RESULT index: STARTs dropped (busy or injected).
pub const TESTDEV_STAT_DROPPED_STARTS: usize = 1;
/// RESULT index: batches that signalled DONE.
pub const TESTDEV_STAT_BATCHES: usize = 2;
/// RESULT index: entries executed or failed.
pub const TESTDEV_STAT_ENTRIES: usize = 3;
/// RESULT index: SQ tail doorbells written by the HDU's engines.
pub const TESTDEV_STAT_SQ_DOORBELLS: usize = 4;
/// RESULT index: CQ head doorbells written by the HDU's engines.
pub const TESTDEV_STAT_CQ_DOORBELLS: usize = 5;
/// RESULT index: staging fetch bursts that crossed a 4 KiB boundary (rev 1 NREQS >= 171).
pub const TESTDEV_STAT_PROTOCOL_VIOLATIONS: usize = 6;
/// RESULT index: entries completed with a non-zero status (rev 2).
pub const TESTDEV_STAT_ERRORS: usize = 7;
/// RESULT index: DMA window violations (rev 2).
pub const TESTDEV_STAT_WINDOW_FAULTS: usize = 8;
/// RESULT index: entries aborted by a reset (rev 2).
pub const TESTDEV_STAT_ABORTED: usize = 9;
/// RESULT index: NVMe I/O commands completed by the controller (whole device).
pub const TESTDEV_STAT_IO_COMMANDS: usize = 10;
/// RESULT index: NVMe I/O commands completed with an error (whole device).
pub const TESTDEV_STAT_IO_ERRORS: usize = 11;
/// RESULT index: NVMe admin commands completed (whole device).
pub const TESTDEV_STAT_ADMIN_COMMANDS: usize = 12;
/// RESULT index: bytes read from the SSD (whole device).
pub const TESTDEV_STAT_BYTES_READ: usize = 13;
/// RESULT index: bytes written to the SSD (whole device).
pub const TESTDEV_STAT_BYTES_WRITTEN: usize = 14;
/// Number of RESULT slots GET_STATS fills.
pub const TESTDEV_STAT_COUNT: usize = 15;
