// SPDX-License-Identifier: MIT OR Apache-2.0
//! The handle's QoS bookkeeping on the I/O path: the depth controller's samples and tenant
//! accounting.

use directnvm_abi::DNVM_OP_READ;

use super::{Handle, Slot};
use crate::qos::delay::class_of;

impl Handle {
    /// A submit found the queue full: tell the depth controller if the limit is the reason.
    pub(super) fn note_full(&mut self) {
        if self.pending() >= self.depth.limit() {
            self.depth.note_limited();
        }
    }

    /// QoS bookkeeping of a finished request (adaptive depth, tenants).
    pub(super) fn account(&mut self, s: &Slot, ok: bool) {
        if s.launch_ns == 0 || !ok || (!self.depth.adaptive() && !self.tenants.accounting()) {
            return;
        }
        let now = self.clock.step();
        if self.depth.adaptive() && s.submit_ns != 0 {
            let class = class_of(s.op != DNVM_OP_READ, s.len);
            self.depth.record(now, now.saturating_sub(s.submit_ns), class);
        }
        if self.tenants.accounting() {
            self.tenants.record(s.info.tenant, u64::from(s.len), now.saturating_sub(s.submit_ns), &mut *self.sched);
        }
    }
}
