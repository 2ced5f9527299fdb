// SPDX-License-Identifier: MIT OR Apache-2.0
//! The controller model's configuration (queues, MDTS, timing).

use crate::timing::SsdParams;

/// Controller configuration.
#[derive(Clone, Debug)]
pub struct NvmeConfig {
    /// I/O queue pairs supported (QIDs 1..=max_io_queues).
    pub max_io_queues: u16,
    /// Largest queue size in entries (CAP.MQES + 1).
    pub max_queue_entries: u32,
    /// MDTS: largest transfer is 2^mdts pages of 4 KiB.
    pub mdts: u8,
    /// Commands the controller works on at once (fetched but not completed).
    pub max_inflight: usize,
    /// Delay from CC.EN = 1 to CSTS.RDY = 1 (and for disable), ns; 0 when timing is off.
    pub enable_delay_ns: u64,
    /// CAP.TO in 500 ms units.
    pub timeout_500ms: u8,
    /// Serial number.
    pub serial: String,
    /// SSD timing parameters.
    pub ssd: SsdParams,
}

impl Default for NvmeConfig {
    fn default() -> Self {
        Self {
            max_io_queues: 64,
            max_queue_entries: 4096,
            mdts: 5,
            max_inflight: 128,
            enable_delay_ns: 1_000_000,
            timeout_500ms: 10,
            serial: "DNVM00000001".into(),
            ssd: SsdParams::default(),
        }
    }
}
