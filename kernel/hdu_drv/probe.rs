// SPDX-License-Identifier: GPL-2.0-only
//! Probe of one HDU node: index, register pages and their claims, revision and caps, the rev 2
//! privileged page and DMA window (the carve-out), then the first engine reset.

use super::*;

pub(super) fn probe_shared(pdev: &platform::Device<device::Core<'_>>) -> Result<Arc<HduShared>> {
    let dev: &device::Device<device::Bound> = pdev.as_ref();
    let fw = dev.fwnode().ok_or(ENODEV)?;
    let index: u32 = fw.property_read(DT_PROP_INDEX).required_by(dev)?;
    if index as usize >= DNVM_MAX_CORES {
        dev_err!(
            dev,
            "directnvm,index {} out of range (max {})\n",
            index,
            DNVM_MAX_CORES - 1
        );
        return Err(EINVAL);
    }
    let res = pdev.resource_by_index(0).ok_or(ENODEV)?;
    let user = PhysWindow {
        base: res.start(),
        size: res.size(),
    };
    if user.size < DNVM_PAGE_SIZE || user.base % DNVM_PAGE_SIZE != 0 {
        dev_err!(dev, "user register page must be a 4 KiB aligned page\n");
        return Err(EINVAL);
    }
    let mut claims = KVec::new();
    claims.push(PhysClaim::new(user, c_str!("directnvm-hdu"))?, GFP_KERNEL)?;
    let user = PhysWindow {
        base: user.base,
        size: DNVM_PAGE_SIZE,
    };
    let regs = pdev
        .io_request_by_index(0)
        .ok_or(ENODEV)?
        .iomap_sized::<USER_SIZE>()?;
    let id = (&regs).try_read64(HduReg::Id.offset())?;
    let Some(revision) = Revision::from_id(id) else {
        dev_err!(
            dev,
            "HDU revision {} is not supported by this driver\n",
            hdu_revision(id)
        );
        return Err(ENODEV);
    };
    let caps = if revision.has_caps() {
        HduCaps::from_reg((&regs).try_read64(HduReg::Caps.offset())?)
    } else {
        HduCaps::REV1
    };
    let regs = regs.into_devres()?;

    let (priv_phys, priv_regs) = match pdev.resource_by_index(1) {
        Some(r) if revision.has_privileged_page() => {
            let base = r.start();
            claims.push(
                PhysClaim::new(
                    PhysWindow {
                        base,
                        size: r.size(),
                    },
                    c_str!("directnvm-hdu-priv"),
                )?,
                GFP_KERNEL,
            )?;
            let p = pdev
                .io_request_by_index(1)
                .ok_or(ENODEV)?
                .iomap_sized::<PRIV_SIZE>()?;
            (base, Some(p.into_devres()?))
        }
        _ => (0, None),
    };
    if revision.has_privileged_page() && priv_regs.is_none() {
        dev_err!(
            dev,
            "rev {} HDU needs its privileged page as reg entry 1\n",
            revision.number()
        );
        return Err(EINVAL);
    }
    let dma = match kshim::carveout(dev, 0) {
        Ok(c) => Some(c.window),
        Err(e) if revision.has_dma_window() => {
            dev_err!(
                dev,
                "rev 2 HDU needs memory-region for its DMA window: {:?}\n",
                e
            );
            return Err(e);
        }
        Err(_) => None,
    };
    let dma = if revision.has_dma_window() { dma } else { None };

    let shared = Arc::pin_init(
        try_pin_init!(HduShared {
            index,
            revision,
            caps,
            user,
            priv_phys,
            dma,
            regs,
            priv_regs,
            _claims: claims,
            reset_lock <- new_mutex!(()),
            state <- new_mutex!(HduState::default()),
        }),
        GFP_KERNEL,
    )?;
    if revision.can_reset() {
        // A plain reset: the queue pointers stay, in step with the controller's queues (only a
        // re-creation of the queues pairs with a queue reset, see docs/design.md).
        shared.reset_engine(false)?;
        shared.state.lock().resets = 0;
    }
    let (dma_base, dma_limit) = dma.map_or((0, 0), |w| (w.base, w.base + w.size));
    dev_info!(
        dev,
        "hdu{}: rev {} at {:#x}, {} engine(s), max nreqs {}, START queue {}, DMA window {:#x}..{:#x}\n",
        index,
        revision.number(),
        user.base,
        caps.engines,
        caps.max_nreqs,
        caps.start_queue,
        dma_base,
        dma_limit
    );
    Ok(shared)
}
