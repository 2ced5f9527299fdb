// SPDX-License-Identifier: GPL-2.0-only
/* hdu.ko's copy of the shared shim object: the source exists once, in directnvm_drv/kshim.c. */
#include "../directnvm_drv/kshim.c"
