// SPDX-License-Identifier: MIT OR Apache-2.0
//! The depth advisor behind `nvmedl advise` (docs/qos.md §5): the M/D/1/K queueing model
//! (`mdk`) and the table and recommendation built on it (`advisor`). Tool code, not library
//! code: the library's level-1 QoS (`nvmedl::qos`) does not need the model at run time.

pub mod advisor;
pub mod mdk;
