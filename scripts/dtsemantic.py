#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR MIT
"""Cross-node checks of a DirectNVM device tree that a per-node schema cannot express.

Usage: dtsemantic.py FILE.dtb   (run with the dtschema venv's python: it needs libfdt)
Prints one "FILE: error" line per problem and exits 1 if there was any; silent on success.

Assumption, true for the QEMU virt overlay and the published ZCU106 design: the PL masters'
bus addresses equal CPU physical addresses (no translation), so the carve-out's reg can be
compared with directnvm,dma-window directly.
"""
import struct
import sys

import libfdt

PAGE = 4096
QUEUE_STRIDE = 0x20000  # SQ at base + q*0x2_0000, CQ at +0x1_0000


def main(path):
    fdt = libfdt.FdtRo(open(path, 'rb').read())
    errors = []
    err = errors.append

    def prop(node, name):
        try:
            return bytes(fdt.getprop(node, name))
        except libfdt.FdtException:
            return None

    def cells(node, name, default):
        v = prop(node, name)
        return struct.unpack('>I', v)[0] if v is not None else default

    def reg(node):
        """[(base, size)] of a node, decoded with its parent's cell counts."""
        parent = fdt.parent_offset(node)
        ac, sc = cells(parent, '#address-cells', 2), cells(parent, '#size-cells', 1)
        raw = prop(node, 'reg') or b''
        words = struct.unpack('>%dI' % (len(raw) // 4), raw)
        out, step = [], ac + sc
        for i in range(0, len(words) - step + 1, step):
            num = lambda ws: sum(w << (32 * (len(ws) - 1 - k)) for k, w in enumerate(ws))
            out.append((num(words[i:i + ac]), num(words[i + ac:i + step])))
        return out

    def u64pair(node, name):
        v = prop(node, name)
        return struct.unpack('>QQ', v) if v is not None and len(v) == 16 else None

    def u32(node, name):
        v = prop(node, name)
        return struct.unpack('>I', v)[0] if v is not None and len(v) == 4 else None

    def path(node):
        return fdt.get_path(node)

    def nodes_compatible(compat):
        out, node, depth = [], 0, 0
        while True:
            if compat.encode() in (prop(node, 'compatible') or b'').split(b'\0'):
                out.append(node)
            try:
                node, depth = fdt.next_node(node, depth)
            except libfdt.FdtException:
                return out
            if node < 0:  # some pylibfdt versions return the error instead of raising
                return out

    def region(node):
        """Resolve memory-region to (path, base, size, no-map) or None."""
        v = prop(node, 'memory-region')
        if v is None or len(v) != 4:
            return None
        ph = struct.unpack('>I', v)[0]
        try:
            target = fdt.node_offset_by_phandle(ph)
        except libfdt.FdtException:
            err(f'{path(node)}: memory-region phandle {ph:#x} does not resolve')
            return None
        if not path(fdt.parent_offset(target)).startswith('/reserved-memory'):
            err(f'{path(node)}: memory-region {path(target)} is not a /reserved-memory child')
        r = reg(target)
        if len(r) != 1:
            err(f'{path(target)}: carve-out needs exactly one reg entry')
            return None
        return path(target), r[0][0], r[0][1], prop(target, 'no-map') is not None

    engines = nodes_compatible('directnvm,engine')
    hdus = nodes_compatible('directnvm,hdu')
    if not engines:
        err('no directnvm,engine node')
    if len(engines) > 1:
        err(f'{len(engines)} directnvm,engine nodes; the drivers support one')
    carve = None
    for e in engines:
        cores = u32(e, 'directnvm,cores') or 0
        epu = u32(e, 'directnvm,engines-per-hdu') or 0
        nq = cores * epu
        carve = region(e)
        r = reg(e)
        if r and r[0][1] < 0x1000 + 8 * (nq + 1):
            err(f'{path(e)}: reg size {r[0][1]:#x} does not cover the doorbells of {nq + 1} '
                f'queue pairs (needs >= {0x1000 + 8 * (nq + 1):#x})')
        qw = u64pair(e, 'directnvm,queue-window')
        if qw and qw[1] < nq * QUEUE_STRIDE:
            err(f'{path(e)}: directnvm,queue-window size {qw[1]:#x} < {nq} queues x '
                f'{QUEUE_STRIDE:#x}')
        dw = u64pair(e, 'directnvm,dma-window')
        if carve:
            cpath, base, size, nomap = carve
            if not nomap:
                err(f'{cpath}: carve-out must be no-map')
            if base % PAGE or size % PAGE:
                err(f'{cpath}: carve-out {base:#x}+{size:#x} is not page aligned')
            if dw and not (dw[0] <= base and base + size <= dw[0] + dw[1]):
                err(f'{cpath}: carve-out {base:#x}..{base + size - 1:#x} is outside '
                    f'directnvm,dma-window {dw[0]:#x}..{dw[0] + dw[1] - 1:#x}')
            if qw and base < qw[0] + qw[1] and qw[0] < base + size:
                err(f'{cpath}: carve-out overlaps directnvm,queue-window')
        dbs = prop(e, 'directnvm,data-buffer-size')
        if dbs is not None:
            n = int.from_bytes(dbs, 'big')
            if n == 0 or n % PAGE:
                err(f'{path(e)}: directnvm,data-buffer-size {n:#x} is not a non-zero multiple '
                    f'of 4096')
            elif carve and n * cores > carve[2]:
                err(f'{path(e)}: {cores} x directnvm,data-buffer-size {n:#x} exceeds the '
                    f'carve-out ({carve[2]:#x})')
        if len(hdus) != cores:
            err(f'{path(e)}: directnvm,cores = {cores} but {len(hdus)} directnvm,hdu nodes')

    seen = {}
    for h in hdus:
        idx = u32(h, 'directnvm,index')
        if idx in seen:
            err(f'{path(h)}: directnvm,index {idx} also used by {seen[idx]}')
        seen[idx] = path(h)
        if engines and idx is not None and idx >= (u32(engines[0], 'directnvm,cores') or 0):
            err(f'{path(h)}: directnvm,index {idx} >= directnvm,cores')
        for base, size in reg(h):
            if size != PAGE or base % PAGE:
                err(f'{path(h)}: register page {base:#x}+{size:#x} must be one aligned 4 KiB page')
        hc = region(h)
        if carve and hc and hc[0] != carve[0]:
            err(f'{path(h)}: memory-region {hc[0]} differs from the engine\'s {carve[0]}')

    for e in errors:
        print(f'{path_arg}: {e}')
    return 1 if errors else 0


if __name__ == '__main__':
    path_arg = sys.argv[1]
    sys.exit(main(path_arg))
