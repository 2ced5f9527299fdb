// SPDX-License-Identifier: MIT OR Apache-2.0
//! Command-line definitions of the DirectNVM tools (clap derive), shared by the binaries and
//! by `nvmedl-mangen`, which writes the man pages from them.
//!
//! Exit status of every tool: 0 success, 1 failure (I/O error, device error, verify mismatch),
//! 2 usage error (clap's code). `--help` and `--version` exit 0 and never open a device.

pub mod advise_report;
pub mod bench_cli;
mod bench_job;
pub mod bench_load;
pub mod bench_qos;
pub mod bench_report;
pub mod bench_run;
mod bench_summary;
pub mod doctor;
pub mod nvmedl_cli;
pub mod progress;
pub mod qos;

/// Exit status: success.
pub const EXIT_OK: u8 = 0;
/// Exit status: the command ran and failed (device, I/O or verify error).
pub const EXIT_FAILURE: u8 = 1;
/// Exit status: bad command line (clap uses the same code for its usage errors).
pub const EXIT_USAGE: u8 = 2;

/// The exit-status section shared by the tools' `--help` and man pages.
pub const EXIT_STATUS_HELP: &str = "Exit status: 0 success, 1 failure (device or I/O error, verify mismatch), 2 usage error.";

/// Parse a number: decimal or `0x` hexadecimal.
pub fn parse_num(s: &str) -> Result<u64, String> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    }
    .map_err(|_| format!("'{s}' is not a number (decimal or 0x-hex)"))
}

/// Parse a size: a number with an optional `k`/`m`/`g` suffix (powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (n, mul) = match s.as_bytes().last() {
        Some(b'k' | b'K') => (&s[..s.len() - 1], 1u64 << 10),
        Some(b'm' | b'M') => (&s[..s.len() - 1], 1 << 20),
        Some(b'g' | b'G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    parse_num(n)?.checked_mul(mul).ok_or_else(|| format!("'{s}' overflows"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_sizes() {
        assert_eq!(parse_num("42"), Ok(42));
        assert_eq!(parse_num("0x10"), Ok(16));
        assert!(parse_num("4k").is_err());
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("128K"), Ok(128 << 10));
        assert_eq!(parse_size("8M"), Ok(8 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("0x1000"), Ok(4096));
        assert!(parse_size("x").is_err());
        assert!(parse_size("99999999999999g").is_err());
    }
}
