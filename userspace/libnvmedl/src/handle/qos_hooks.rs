// SPDX-License-Identifier: MIT OR Apache-2.0
//! The handle's QoS bookkeeping on the I/O path: the coarse clock, the depth controller's
//! samples and tenant accounting.

use super::*;
use crate::qos::delay::class_of;

impl Handle {
    pub(super) fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// A submit found the queue full: tell the depth controller if the limit is the reason.
    pub(super) fn note_full(&mut self) {
        if self.pending() >= self.iodepth {
            if let Some(c) = self.depth_ctl.as_mut() {
                c.note_limited();
            }
        }
    }

    /// The clock reading of this `progress` step (read at most once per step).
    pub(super) fn step_clock(&mut self) -> u64 {
        if self.step_ns == 0 {
            self.step_ns = self.now_ns().max(1);
            self.clock_ns = self.step_ns;
        }
        self.step_ns
    }

    /// QoS bookkeeping of a finished request (adaptive depth, tenants).
    pub(super) fn account(&mut self, s: &Slot, ok: bool) {
        if s.launch_ns == 0 || !ok || (self.depth_ctl.is_none() && self.tenants.is_none()) {
            return;
        }
        let now = self.step_clock();
        if let Some(c) = self.depth_ctl.as_mut().filter(|_| s.submit_ns != 0) {
            let class = class_of(s.op != DNVM_OP_READ, s.len);
            if let Some(limit) = c.record(now, now.saturating_sub(s.submit_ns), class) {
                self.iodepth = limit;
            }
        }
        if let Some(t) = self.tenants.as_mut() {
            if t.record(s.info.tenant, u64::from(s.len), now.saturating_sub(s.submit_ns)) {
                t.end_window();
                for k in 0..MAX_TENANTS as u32 {
                    self.sched.set_tenant_weight(k, t.boost(k));
                }
                t.publish(false);
            }
        }
    }
}
