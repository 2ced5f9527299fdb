// SPDX-License-Identifier: MIT OR Apache-2.0
//! SIGTERM/SIGINT handling without a handler: blocked in every thread (the queue threads
//! inherit the mask), then taken synchronously by the main thread with `sigwait`.

fn stop_set() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, exclusively borrowed sigset_t.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
    }
    set
}

/// Block SIGTERM and SIGINT in this thread and every thread it starts afterwards.
pub fn block_stop_signals() {
    let set = stop_set();
    // SAFETY: valid set pointer; a null old-set pointer is allowed.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}

/// Wait for SIGTERM or SIGINT; returns the signal number.
pub fn wait_stop_signal() -> i32 {
    let set = stop_set();
    let mut sig = 0;
    // SAFETY: valid set and out pointers; the signals are blocked (block_stop_signals).
    while unsafe { libc::sigwait(&set, &mut sig) } != 0 {}
    sig
}
