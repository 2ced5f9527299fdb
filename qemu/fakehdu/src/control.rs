// SPDX-License-Identifier: MIT OR Apache-2.0
//! Control operations shared by the Unix control socket and the guest test mailbox.
//!
//! Socket protocol: one command per line, one reply line: `ok [key=value ...]` or
//! `err <message>`. Commands:
//!
//! | command | effect |
//! |---|---|
//! | `ping` | `ok` |
//! | `stats` | `ok key=value ...` (see `Stats::to_kv`) |
//! | `fault io <lba_start> <lba_end> <status> [opcode\|any] [count]` | I/O commands overlapping the LBA range complete with the NVMe status field (e.g. `0x281`), no data moved; count 0/absent = forever |
//! | `fault drop-start <hdu> <count>` | drop the next STARTs of an HDU |
//! | `fault stuck <hdu> on\|off` | the HDU never sets DONE |
//! | `fault slow <permille>` | multiply SSD times by permille/1000 |
//! | `fault window <hdu> <count>` | next entries fail the DMA window check (rev 2) |
//! | `faults clear` | remove all faults |
//! | `quiesce` / `resume` | stop / restart servicing HDUs and the controller |
//! | `restart` | power-cycle the device: registers, queues, faults and counters back to power-on, commands in flight lost, namespace data kept |
//! | `shutdown` | flush the disk image and exit |
//!
//! Numbers are decimal or `0x` hexadecimal.

use crate::faults::IoFault;

/// One control operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlOp {
    /// Liveness.
    Ping,
    /// Counter snapshot.
    Stats,
    /// Remove all faults.
    ClearFaults,
    /// Add an I/O error rule.
    IoError(IoFault),
    /// Drop the next `count` STARTs of `hdu`.
    DropStart {
        /// HDU index.
        hdu: usize,
        /// Number of STARTs.
        count: u32,
    },
    /// Hold DONE back on `hdu`.
    Stuck {
        /// HDU index.
        hdu: usize,
        /// On or off.
        on: bool,
    },
    /// Slow the SSD down.
    Slow {
        /// Time multiplier in 1/1000.
        permille: u64,
    },
    /// Fail the window check of the next `count` entries of `hdu`.
    Window {
        /// HDU index.
        hdu: usize,
        /// Number of entries.
        count: u32,
    },
    /// Stop servicing.
    Quiesce,
    /// Resume servicing.
    Resume,
    /// Power-cycle the device (see `Device::restart`).
    Restart,
    /// Exit the model.
    Shutdown,
}

/// Parse a decimal or 0x-hex number.
pub fn num(s: &str) -> crate::Result<u64> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| crate::Error::Control(format!("bad number '{s}'")))
}

/// Parse one socket line.
pub fn parse_line(line: &str) -> crate::Result<ControlOp> {
    let w: Vec<&str> = line.split_whitespace().collect();
    let arg = |i: usize| w.get(i).copied().ok_or_else(|| crate::Error::Control(format!("missing argument {i}")));
    let n = |i: usize| arg(i).and_then(num);
    match w.as_slice() {
        ["ping"] => Ok(ControlOp::Ping),
        ["stats"] => Ok(ControlOp::Stats),
        ["faults", "clear"] => Ok(ControlOp::ClearFaults),
        ["quiesce"] => Ok(ControlOp::Quiesce),
        ["resume"] => Ok(ControlOp::Resume),
        ["restart"] => Ok(ControlOp::Restart),
        ["shutdown"] => Ok(ControlOp::Shutdown),
        ["fault", "io", ..] => {
            let opcode = match w.get(5) {
                None | Some(&"any") => None,
                Some(s) => Some(u8::try_from(num(s)?).map_err(|_| crate::Error::Control("opcode out of range".into()))?),
            };
            let count = match w.get(6) {
                None => 0,
                Some(s) => num(s)?,
            };
            Ok(ControlOp::IoError(IoFault {
                lba_start: n(2)?,
                lba_end: n(3)?,
                status: u16::try_from(n(4)?).map_err(|_| crate::Error::Control("status out of range".into()))? & 0x7fff,
                opcode,
                remaining: (count != 0).then_some(count.min(u64::from(u32::MAX)) as u32),
            }))
        }
        ["fault", "drop-start", ..] => Ok(ControlOp::DropStart { hdu: n(2)? as usize, count: n(3)? as u32 }),
        ["fault", "stuck", _, state] => Ok(ControlOp::Stuck { hdu: n(2)? as usize, on: *state == "on" || *state == "1" }),
        ["fault", "slow", ..] => Ok(ControlOp::Slow { permille: n(2)? }),
        ["fault", "window", ..] => Ok(ControlOp::Window { hdu: n(2)? as usize, count: n(3)? as u32 }),
        _ => Err(crate::Error::Control(format!("unknown command '{}'", line.trim()))),
    }
}
