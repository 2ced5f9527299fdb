//! Quality of service (level 1 of the two-level queue, DESIGN §7, docs/qos.md): the adaptive
//! depth controller (`depth`), the tiered scheduler with a starvation guard (`tiers`), tenant
//! accounting and boosting (`tenant`), and the queueing model behind the depth advisor (`mdk`).

pub mod depth;
pub mod mdk;
