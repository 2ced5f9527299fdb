// SPDX-License-Identifier: GPL-2.0-only
//! `/dev/directnvm` ioctl decoding and argument checks: core-only logic, KUnit-tested at module
//! load (suite `directnvm_ioctl`).

use super::*;

/// Numbers of the ioctls this device knows (a known number with a wrong size is EINVAL).
pub(crate) const KNOWN_NRS: core::ops::RangeInclusive<u32> = 0x01..=0x07;

/// What a `/dev/directnvm` ioctl number asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmd {
    GetInfo,
    GetLayout,
    Claim,
    Release,
    ControllerInit,
    SetArbitration,
    GetStats,
}

/// Decode an ioctl number: the exact number (direction, size, type, nr) of a command, else
/// EINVAL for a known command number with the wrong size or direction, ENOTTY for the rest.
pub(crate) fn decode_ioctl(cmd: u32) -> Result<Cmd> {
    Ok(match cmd {
        DNVM_IOC_GET_INFO => Cmd::GetInfo,
        DNVM_IOC_GET_LAYOUT => Cmd::GetLayout,
        DNVM_IOC_CLAIM => Cmd::Claim,
        DNVM_IOC_RELEASE => Cmd::Release,
        DNVM_IOC_CONTROLLER_INIT => Cmd::ControllerInit,
        DNVM_IOC_SET_ARBITRATION => Cmd::SetArbitration,
        DNVM_IOC_GET_STATS => Cmd::GetStats,
        _ => {
            let known =
                dnvm_ioc_type(cmd) == DNVM_IOC_MAGIC && KNOWN_NRS.contains(&dnvm_ioc_nr(cmd));
            return Err(if known { EINVAL } else { ENOTTY });
        }
    })
}

/// Check a CLAIM/RELEASE argument against the number of cores; the core index on success.
pub(crate) fn validate_claim(c: &DnvmClaim, cores: u32) -> Result<usize> {
    if c.flags != 0 || c.core >= cores || c.core as usize >= DNVM_MAX_CORES {
        return Err(EINVAL);
    }
    Ok(c.core as usize)
}

/// Check a SET_ARBITRATION argument (burst log2 0..7, weights 0..255).
pub(crate) fn validate_arbitration(a: &DnvmArbitration) -> Result {
    if nvme::arbitration_valid(a) {
        Ok(())
    } else {
        Err(EINVAL)
    }
}

/// Commands that change device state need a file opened for writing (EBADF otherwise, like
/// write(2) on a read-only descriptor); read-only opens keep GET_INFO, GET_LAYOUT, GET_STATS.
pub(crate) fn needs_write(c: Cmd) -> bool {
    matches!(
        c,
        Cmd::Claim | Cmd::Release | Cmd::ControllerInit | Cmd::SetArbitration
    )
}

#[cfg(CONFIG_KUNIT = "y")]
#[kernel::prelude::kunit_tests(directnvm_ioctl)]
mod tests {
    use super::*;

    #[test]
    fn every_command_decodes() {
        for (nr, cmd) in [
            (DNVM_IOC_GET_INFO, Cmd::GetInfo),
            (DNVM_IOC_GET_LAYOUT, Cmd::GetLayout),
            (DNVM_IOC_CLAIM, Cmd::Claim),
            (DNVM_IOC_RELEASE, Cmd::Release),
            (DNVM_IOC_CONTROLLER_INIT, Cmd::ControllerInit),
            (DNVM_IOC_SET_ARBITRATION, Cmd::SetArbitration),
            (DNVM_IOC_GET_STATS, Cmd::GetStats),
        ] {
            assert_eq!(decode_ioctl(nr), Ok(cmd));
        }
    }

    #[test]
    fn wrong_size_or_direction_is_einval_unknown_is_enotty() {
        let info = core::mem::size_of::<DnvmInfo>();
        for (nr, err) in [
            (
                dnvm_ioc(DNVM_IOC_READ, DNVM_IOC_MAGIC, 0x01, info - 8),
                EINVAL,
            ),
            (
                dnvm_ioc(DNVM_IOC_READ, DNVM_IOC_MAGIC, 0x01, info + 8),
                EINVAL,
            ),
            (dnvm_ioc(DNVM_IOC_WRITE, DNVM_IOC_MAGIC, 0x01, info), EINVAL),
            (dnvm_ioc(DNVM_IOC_WRITE, DNVM_IOC_MAGIC, 0x03, 4), EINVAL),
            (dnvm_ioc(DNVM_IOC_NONE, DNVM_IOC_MAGIC, 0x05, 8), EINVAL),
            (dnvm_ioc(DNVM_IOC_READ, DNVM_IOC_MAGIC, 0x00, 8), ENOTTY),
            (dnvm_ioc(DNVM_IOC_READ, DNVM_IOC_MAGIC, 0x08, 8), ENOTTY),
            (dnvm_ioc(DNVM_IOC_READ, DNVM_IOC_MAGIC, 0x7f, 8), ENOTTY),
            (dnvm_ioc(DNVM_IOC_READ, HDU_IOC_MAGIC, 0x01, info), ENOTTY),
            (0, ENOTTY),
        ] {
            assert_eq!(decode_ioctl(nr), Err(err));
        }
    }

    #[test]
    fn claim_arguments() {
        for (core, flags, cores, want) in [
            (0, 0, 4, Ok(0)),
            (3, 0, 4, Ok(3)),
            (4, 0, 4, Err(EINVAL)),
            (u32::MAX, 0, 4, Err(EINVAL)),
            (0, 1, 4, Err(EINVAL)),
            (8, 0, 9, Err(EINVAL)),
        ] {
            assert_eq!(validate_claim(&DnvmClaim { core, flags }, cores), want);
        }
    }

    #[test]
    fn arbitration_arguments() {
        let arb = |burst, high, medium, low| DnvmArbitration {
            burst,
            high,
            medium,
            low,
        };
        assert_eq!(validate_arbitration(&nvme::DEFAULT_ARBITRATION), Ok(()));
        assert_eq!(validate_arbitration(&arb(7, 255, 255, 255)), Ok(()));
        for bad in [
            arb(8, 0, 0, 0),
            arb(0, 256, 0, 0),
            arb(0, 0, 256, 0),
            arb(0, 0, 0, u32::MAX),
        ] {
            assert_eq!(validate_arbitration(&bad), Err(EINVAL));
        }
    }
}
