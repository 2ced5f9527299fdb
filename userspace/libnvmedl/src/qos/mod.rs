// SPDX-License-Identifier: MIT OR Apache-2.0
//! Quality of service (level 1 of the two-level queue, DESIGN §7). Today: the queueing model
//! behind the depth advisor (`mdk`).

pub mod mdk;
