// SPDX-License-Identifier: MIT OR Apache-2.0
//! Guest-visible test mailbox (QEMU board only): a 4 KiB page where a guest test program
//! (mapping it through /dev/mem) asks for the same operations as the control socket.
//! Layout and protocol: `TESTDEV_*` in the ABI and docs/hardware.md.

use directnvm_abi::*;

use crate::control::ControlOp;
use crate::faults::IoFault;
use crate::mem::GuestMem;

/// A decoded mailbox request.
#[derive(Debug)]
pub enum Request {
    /// A control operation.
    Op(ControlOp),
    /// Statistics of one HDU.
    Stats(usize),
    /// Malformed request, answer with this status.
    Bad(u32),
}

/// The mailbox page.
#[derive(Clone, Debug)]
pub struct Mailbox {
    base: u64,
    ack: u32,
}

impl Mailbox {
    /// A mailbox at `base`; writes the magic, version and a zero ACK_SEQ.
    pub fn new(mem: &GuestMem, base: u64) -> Self {
        let ack = mem.load32(base + TESTDEV_REG_REQ_SEQ as u64).unwrap_or(0);
        let m = Self { base, ack };
        let _ = mem.store32(base + TESTDEV_REG_ACK_SEQ as u64, ack);
        m.assert_magic(mem);
        m
    }

    fn at(&self, off: usize) -> u64 {
        self.base + off as u64
    }

    fn assert_magic(&self, mem: &GuestMem) {
        if mem.load32(self.at(TESTDEV_REG_MAGIC)).ok() != Some(TESTDEV_MAGIC) {
            let _ = mem.store32(self.at(TESTDEV_REG_MAGIC), TESTDEV_MAGIC);
            let _ = mem.store32(self.at(TESTDEV_REG_VERSION), TESTDEV_VERSION);
        }
    }

    /// A new request, if the guest bumped REQ_SEQ.
    pub fn poll(&mut self, mem: &GuestMem) -> Option<(u32, Request)> {
        self.assert_magic(mem);
        let seq = mem.load32(self.at(TESTDEV_REG_REQ_SEQ)).ok()?;
        if seq == self.ack {
            return None;
        }
        let cmd = mem.load32(self.at(TESTDEV_REG_CMD)).unwrap_or(0);
        let mut a = [0u64; TESTDEV_NARGS];
        for (i, v) in a.iter_mut().enumerate() {
            *v = mem.load64(self.at(TESTDEV_REG_ARGS + 8 * i)).unwrap_or(0);
        }
        Some((seq, decode(cmd, &a)))
    }

    /// Answer request `seq`: STATUS and RESULT first, ACK_SEQ last.
    pub fn reply(&mut self, mem: &GuestMem, seq: u32, status: u32, result: &[u64]) {
        for (i, v) in result.iter().take(TESTDEV_NRESULTS).enumerate() {
            let _ = mem.store64(self.at(TESTDEV_REG_RESULT + 8 * i), *v);
        }
        let _ = mem.store32(self.at(TESTDEV_REG_STATUS), status);
        let _ = mem.store32(self.at(TESTDEV_REG_ACK_SEQ), seq);
        self.ack = seq;
    }
}

fn decode(cmd: u32, a: &[u64; TESTDEV_NARGS]) -> Request {
    let small = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    match cmd {
        TESTDEV_CMD_PING => Request::Op(ControlOp::Ping),
        TESTDEV_CMD_CLEAR_FAULTS => Request::Op(ControlOp::ClearFaults),
        TESTDEV_CMD_QUIESCE => Request::Op(ControlOp::Quiesce),
        TESTDEV_CMD_RESUME => Request::Op(ControlOp::Resume),
        TESTDEV_CMD_RESTART => Request::Op(ControlOp::Restart),
        TESTDEV_CMD_GET_STATS => Request::Stats(a[0] as usize),
        TESTDEV_CMD_SET_FAULT => match a[0] {
            TESTDEV_FAULT_IO_ERROR => Request::Op(ControlOp::IoError(IoFault {
                lba_start: a[1],
                lba_end: a[2],
                status: (a[3] & 0x7fff) as u16,
                opcode: (a[4] <= 0xfe).then_some(a[4] as u8),
                remaining: (a[5] != 0).then_some(small(a[5])),
            })),
            TESTDEV_FAULT_DROP_START => Request::Op(ControlOp::DropStart { hdu: a[1] as usize, count: small(a[2]) }),
            TESTDEV_FAULT_STUCK => Request::Op(ControlOp::Stuck { hdu: a[1] as usize, on: a[2] != 0 }),
            TESTDEV_FAULT_SLOW => Request::Op(ControlOp::Slow { permille: a[1] }),
            TESTDEV_FAULT_WINDOW => Request::Op(ControlOp::Window { hdu: a[1] as usize, count: small(a[2]) }),
            _ => Request::Bad(TESTDEV_STATUS_BAD_ARG),
        },
        _ => Request::Bad(TESTDEV_STATUS_BAD_CMD),
    }
}
