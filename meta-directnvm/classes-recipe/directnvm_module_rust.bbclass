# SPDX-License-Identifier: MIT OR Apache-2.0
# Out-of-tree Rust kernel modules on every release the layer supports: oe-core's module-rust
# class where the release has it (wrynose on), else the same steps here (scarthgap, whinlatter:
# oe-core has no Rust kernel-module support there).
#
# Either way the kernel must be built with CONFIG_RUST=y (and MODVERSIONS off) by the same
# rust-native the modules are built with. With oe-core's support that is
# KERNEL_FEATURES += "rust"; without it, the kernel recipe enables Rust itself (a config
# fragment and the native tools, docs/yocto.md) and the build says so by setting
# DIRECTNVM_KERNEL_RUST = "1". Otherwise the recipe is skipped with the reason, rather than
# failing in the middle of the kernel's build system.

DIRECTNVM_KERNEL_RUST ??= "${@bb.utils.contains('KERNEL_FEATURES', 'rust', '1', '0', d)}"

DIRECTNVM_MODULE_CLASS ?= "${@'module-rust' if bb.utils.which(d.getVar('BBPATH'), 'classes-recipe/module-rust.bbclass') else 'module'}"
inherit_defer ${DIRECTNVM_MODULE_CLASS}

# nooelint: oelint.task.noanonpython - the skip and the class choice are parse-time decisions
python __anonymous() {
    if d.getVar('DIRECTNVM_MODULE_CLASS') == 'module':
        if d.getVar('DIRECTNVM_KERNEL_RUST') != '1':
            raise bb.parse.SkipRecipe(
                "the kernel is not known to be Rust-enabled: build it with CONFIG_RUST=y and set "
                "DIRECTNVM_KERNEL_RUST = \"1\" (docs/yocto.md)")
        # What module-rust does: the kernel's rustc, its paths kept out of the modules.
        d.appendVar('DEPENDS', ' rust-native')
        d.setVar('KRUSTFLAGS', ' --remap-path-prefix=%s=%s' % (d.getVar('S'), d.getVar('TARGET_DBGSRC_DIR')))
        d.appendVar('EXTRA_OEMAKE', ' KRUSTFLAGS="${KRUSTFLAGS}"')
        d.setVar('CCACHE_DISABLE', '1')
}
