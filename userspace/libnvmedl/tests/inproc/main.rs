// SPDX-License-Identifier: MIT OR Apache-2.0
//! libnvmedl's host tests, against the in-process backend (`nvmedl-inproc`: the fakehdu model
//! with the kernel's own layout and NVMe bring-up). They use the public Rust API and the C ABI
//! only; the backend is a dev-dependency, so the library never depends on test code.

mod backoff;
mod completion;
mod ffi;
mod handle;
mod qos;
