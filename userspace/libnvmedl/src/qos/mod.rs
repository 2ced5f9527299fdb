// SPDX-License-Identifier: MIT OR Apache-2.0
//! Quality of service (level 1 of the two-level queue, DESIGN §7, docs/qos.md): the adaptive
//! depth controller (`depth`), the tiered scheduler with a starvation guard (`tiers`), tenant
//! accounting and boosting (`tenant`). The queueing model behind the depth advisor lives with
//! its one user, `nvmedl advise` (userspace/tools/src/qos/); the depth controller's test plant
//! is an integration test (tests/depth_sim/).

pub mod delay;
pub mod depth;
pub mod tenant;
pub mod tiers;

pub use depth::{DepthConfig, DepthController, DepthSample};
pub use tenant::{process_stats, TenantConfig, TenantStats, TenantTable, MAX_TENANTS};
pub use tiers::{TierConfig, TierStats, Tiered};
