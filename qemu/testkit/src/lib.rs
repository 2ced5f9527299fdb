// SPDX-License-Identifier: MIT OR Apache-2.0
//! The test kit of the DirectNVM test crates (the guest suite `qemu/guest-tests`, the device
//! model's tests `qemu/fakehdu/tests`): one copy of the seeded generators, the data patterns
//! and their checks, and the raw ioctl helpers the cases share.
//!
//! Every generator here is bit-exact on purpose: seeds are printed for reproduction, and data
//! written by one process (the ublk writer) is checked by another (the verifier), so the byte
//! sequences must never change.

pub mod bytes;
pub mod ioctl;
pub mod pattern;
pub mod rng;
