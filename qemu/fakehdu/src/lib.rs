// SPDX-License-Identifier: MIT OR Apache-2.0
//! # fakehdu — the fake DirectNVM HDU device (virtual FPGA + NVMe SSD)
//!
//! A host-side model of the programmable logic of the DirectNVM board: HDU register pages,
//! NVMe access engines (NAEs), an NVMe 1.3 controller with WRR arbitration and an SSD timing
//! model, backed by a sparse disk image. It services guest memory: the QEMU guest's RAM file
//! (`fake-hdu` binary) or anonymous memory in the same process (host tests of the userspace
//! library). The register map and behaviour are specified in `docs/hardware.md`.
//!
//! ## In-process API
//!
//! ```no_run
//! use fakehdu::{Config, FakeHdu, test_support::{bringup, nvme_config, ModelHost}};
//! let mut cfg = Config::in_process(2);               // rev 2, anonymous RAM, temp disk
//! cfg.timing = fakehdu::TimingMode::None;
//! let dev = FakeHdu::start(cfg).unwrap();            // polling thread running
//! let board = dev.board().clone();
//! let host = ModelHost::sleeping(dev.mem(), board.nvme_bar, board.carveout);
//! bringup::bring_up(&host, nvme_config(&board)).unwrap(); // the kernel's admin bring-up
//! let regs: *mut u8 = dev.hdu_regs(0).unwrap();      // what mmap of /dev/hdu0 gives
//! let carve: *mut u8 = dev.carveout().unwrap();      // staging/status/data live here
//! let p = dev.host_ptr(board.carveout + 0x10000, 4096).unwrap(); // any guest-physical range
//! # let _ = (regs, carve, p);
//! ```
//!
//! * `FakeHdu::start(Config)` builds a [`Device`] and runs it on a polling thread;
//!   `FakeHdu::device()` locks it (pausing the thread) for direct inspection;
//!   `FakeHdu::control(ControlOp)` is the control socket's command set (faults, stats, ...).
//! * Addresses are guest-physical, exactly as on the QEMU board ([`Board::qemu_default`]);
//!   `host_ptr`/`hdu_regs`/`hdu_priv`/`carveout` translate them to host pointers. Access them
//!   with volatile or atomic operations: the model reads and writes the same memory.
//! * On rev 2, program the DMA window first ([`test_support::program_window`]): a zero
//!   DMA_LIMIT disables the HDU, as on hardware before hdu_drv probes.
//! * [`test_support::ModelHost`] lets tests run the kernel's own NVMe bring-up
//!   (`directnvm_abi::bringup`) against the model; it uses the first 64 KiB of the carve-out.
//! * Deterministic tests own a [`Device`] and call [`Device::step`] /
//!   [`Device::run_until_idle`] themselves, with [`TimingMode::Virtual`] for timing.

pub mod board;
pub mod board_dts;
pub mod clock;
pub mod control;
pub mod device;
pub mod disk;
pub mod error;
pub mod faults;
pub mod hdu;
pub mod mailbox;
pub mod mem;
pub mod nvme;
pub mod runner;
pub mod socket;
pub mod stats;
pub mod test_support;
pub mod timing;

pub use board::Board;
pub use clock::TimingMode;
pub use control::ControlOp;
pub use device::{Config, Device, DiskSource, MemorySource};
pub use error::{Error, Result};
pub use mem::GuestMem;
pub use runner::FakeHdu;
pub use stats::Stats;
