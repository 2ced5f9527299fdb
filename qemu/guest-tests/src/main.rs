//! Guest-side test suite of the DirectNVM virtual board. Runs as a static aarch64 binary in the
//! QEMU guest's initramfs after the init script loaded directnvm.ko and hdu.ko; prints TAP and
//! ends with `N passed, N failed`. Exit status 0 only if every case passed.
//!
//! Usage: `dnvm-guest-tests suite` (everything), `info` (demo output), `libbench` (library
//! figures, `make bench-guest`) or `wrr` (the arbitration experiment, `make wrr`).

mod drivers;
mod kdrv;
mod klog;
mod library;
mod rawio;
mod sys;
mod tap;
mod wrr;

fn main() {
    let arg = std::env::args().nth(1).unwrap_or_else(|| "suite".into());
    let ok = match arg.as_str() {
        "suite" => {
            let mut t = tap::Tap::default();
            drivers::run(&mut t);
            rawio::run(&mut t);
            kdrv::run(&mut t);
            library::run(&mut t);
            klog::run(&mut t);
            t.finish()
        }
        "info" => drivers::show(),
        "wrr" => wrr::run(),
        "libbench" => library::bench_mode(),
        other => {
            eprintln!("usage: dnvm-guest-tests [suite|info|libbench|wrr] (got {other})");
            false
        }
    };
    std::process::exit(if ok { 0 } else { 1 });
}
