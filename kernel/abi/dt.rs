// SPDX-License-Identifier: MIT OR Apache-2.0
//! Device-tree compatibles, property names and defaults shared by the drivers, the binding
//! (dts/bindings/) and the device model. C strings, so the kernel's OF and property APIs take
//! them as they are; userspace reads them with `to_str()` / `to_bytes()`.

use super::sizes::DNVM_REV1_MAX_NREQS;

/// Compatible of the engine node (directnvm_drv).
pub const DT_COMPAT_ENGINE: &core::ffi::CStr = c"directnvm,engine";
/// Compatible of an HDU node (hdu_drv).
pub const DT_COMPAT_HDU: &core::ffi::CStr = c"directnvm,hdu";
/// Engine node: number of HDUs (cores) served (required, 1..=`DNVM_MAX_CORES`).
pub const DT_PROP_CORES: &core::ffi::CStr = c"directnvm,cores";
/// Engine node: NVMe I/O queue engines behind each HDU (1, 2 or 4).
pub const DT_PROP_ENGINES_PER_HDU: &core::ffi::CStr = c"directnvm,engines-per-hdu";
/// Default of `DT_PROP_ENGINES_PER_HDU` (the published RTL).
pub const DT_DEFAULT_ENGINES_PER_HDU: u32 = 1;
/// Engine node: entries of each core's staging queue (1..=`DNVM_MAX_STAGING_ENTRIES`).
pub const DT_PROP_STAGING_ENTRIES: &core::ffi::CStr = c"directnvm,staging-entries";
/// Default of `DT_PROP_STAGING_ENTRIES`: the most a rev 1 HDU fetches safely.
pub const DT_DEFAULT_STAGING_ENTRIES: u32 = DNVM_REV1_MAX_NREQS;
/// Largest `DT_PROP_STAGING_ENTRIES`: NREQS per START is a 16-bit field of CAPS.
pub const DNVM_MAX_STAGING_ENTRIES: u32 = 65535;
/// Engine node: entries of each engine's NVMe I/O queue.
pub const DT_PROP_IO_QUEUE_DEPTH: &core::ffi::CStr = c"directnvm,io-queue-depth";
/// Default of `DT_PROP_IO_QUEUE_DEPTH` (the published RTL).
pub const DT_DEFAULT_IO_QUEUE_DEPTH: u32 = 32;
/// Engine node: data buffer bytes per core (0 or absent: share the rest of the carve-out).
pub const DT_PROP_DATA_BUFFER_SIZE: &core::ffi::CStr = c"directnvm,data-buffer-size";
/// Engine node: bus base and size of the engines' queue memory (two u64).
pub const DT_PROP_QUEUE_WINDOW: &core::ffi::CStr = c"directnvm,queue-window";
/// Engine node: bus range the engines can reach (two u64; optional).
pub const DT_PROP_DMA_WINDOW: &core::ffi::CStr = c"directnvm,dma-window";
/// HDU node: instance index N of `/dev/hduN` (required, 0..`DNVM_MAX_CORES`).
pub const DT_PROP_INDEX: &core::ffi::CStr = c"directnvm,index";
