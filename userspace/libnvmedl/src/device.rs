// SPDX-License-Identifier: MIT OR Apache-2.0
//! `Device`: one DirectNVM engine (what `/dev/directnvm` describes) and the way to a `Handle`.

use std::sync::Arc;

use directnvm_abi::*;

use crate::error::Result;
use crate::handle::{Handle, HandleOptions};
use crate::platform::Platform;

/// One DirectNVM engine (what `/dev/directnvm` describes).
#[derive(Clone)]
pub struct Device {
    pub(crate) platform: Arc<dyn Platform>,
    pub(crate) info: DnvmInfo,
}

impl Device {
    /// Open `/dev/directnvm`.
    pub fn open() -> Result<Device> {
        Self::open_path(crate::chardev::DEFAULT_DEVICE)
    }

    /// Open the engine device at `path`.
    pub fn open_path(path: &str) -> Result<Device> {
        Self::from_platform(Arc::new(crate::chardev::CharDev::open(path)?))
    }

    /// A device on any backend (e.g. `inproc::InProc`).
    pub fn from_platform(platform: Arc<dyn Platform>) -> Result<Device> {
        let info = platform.info()?;
        Ok(Device { platform, info })
    }

    /// Device information as read at open (`refresh_info` re-reads it).
    pub fn info(&self) -> &DnvmInfo {
        &self.info
    }

    /// Re-read the device information (e.g. after `controller_init`).
    pub fn refresh_info(&mut self) -> Result<&DnvmInfo> {
        self.info = self.platform.info()?;
        Ok(&self.info)
    }

    /// Region layout.
    pub fn layout(&self) -> Result<DnvmLayout> {
        self.platform.layout()
    }

    /// Number of cores (HDUs).
    pub fn cores(&self) -> u32 {
        self.info.cores
    }

    /// The backend.
    pub fn platform(&self) -> &Arc<dyn Platform> {
        &self.platform
    }

    /// HDU information of `core` (briefly opens the HDU; fails with `Busy` while a handle
    /// owns it).
    pub fn hdu_info(&self, core: u32) -> Result<HduInfo> {
        self.platform.hdu_info(core)
    }

    /// Reset the engine of `core` (rev 2).
    pub fn reset_hdu(&self, core: u32) -> Result<()> {
        self.platform.reset_hdu(core)
    }

    /// Program NVMe arbitration (burst log2, weights minus one).
    pub fn set_arbitration(&self, a: DnvmArbitration) -> Result<()> {
        self.platform.set_arbitration(a)
    }

    /// Re-initialise the controller: CONTROLLER_INIT, then a queue reset of every rev 2 HDU.
    /// No core may be claimed and no HDU open (`Busy`); on rev 1, `Revision` once a core was
    /// claimed since the queues were created (the engines keep their queue pointers).
    pub fn controller_init(&self) -> Result<()> {
        self.platform.controller_init()
    }

    /// A handle on `core` with default options.
    pub fn handle(&self, core: u32) -> Result<Handle> {
        self.handle_with(core, HandleOptions::default())
    }

    /// A handle on `core`.
    pub fn handle_with(&self, core: u32, opts: HandleOptions) -> Result<Handle> {
        Handle::new(self, core, opts)
    }
}
