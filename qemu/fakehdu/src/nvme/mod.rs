// SPDX-License-Identifier: MIT OR Apache-2.0
//! NVMe 1.3 controller model (registers, admin and NVM command sets, arbitration).

pub mod admin;
pub mod arbiter;
mod config;
pub mod controller;
pub mod identify;
pub mod io;
pub mod prp;
mod queue;
pub mod spec;

pub use controller::{Controller, NvmeConfig};
