// SPDX-License-Identifier: MIT OR Apache-2.0
//! Give the C shared library a soname, `libnvmedl.so.<major>`, so programs linked against it
//! keep working across compatible updates (`make install` installs `libnvmedl.so.<version>`
//! with the `libnvmedl.so.<major>` and `libnvmedl.so` links).

fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_else(|_| "0".into());
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnvmedl.so.{major}");
    println!("cargo:rerun-if-changed=build.rs");
}
