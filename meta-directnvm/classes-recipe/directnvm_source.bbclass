# SPDX-License-Identifier: MIT OR Apache-2.0
# The DirectNVM-rs sources for the recipes of this layer: one git fetch, unpacked where S points
# by default in every release the layer supports (destsuffix=${BP}: ${WORKDIR}/${BP} on
# scarthgap, ${UNPACKDIR}/${BP} from whinlatter on, where setting S to a git directory is an
# error). Defaults a distro or local.conf overrides (docs/yocto.md):
#
# DIRECTNVM_GIT: by default the git repository this layer lives in (the recipe's directory
# three levels up is the layer, one more the repository), fetched at the commit its main
# branch points to. A product build pins both, e.g.
#   DIRECTNVM_GIT = "git://github.com/<org>/directnvm-rs.git;protocol=https;branch=main"
#   DIRECTNVM_SRCREV = "<40 hex digits>"
DIRECTNVM_GIT ??= "git://${@os.path.normpath(d.getVar('FILE_DIRNAME') + '/../../..')};protocol=file;branch=main"
DIRECTNVM_SRCREV ??= "${AUTOREV}"
# The recipes' HOMEPAGE: where you publish DirectNVM-rs.
DIRECTNVM_HOMEPAGE ??= ""

HOMEPAGE = "${DIRECTNVM_HOMEPAGE}"
PV .= "+git"
SRC_URI = "${DIRECTNVM_GIT};name=directnvm;destsuffix=${BP}"
SRCREV_directnvm = "${DIRECTNVM_SRCREV}"
SRCREV_FORMAT ?= "directnvm"
