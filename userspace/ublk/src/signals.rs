// SPDX-License-Identifier: MIT OR Apache-2.0
//! Stop requests without a signal handler: SIGTERM, SIGINT and the internal wake-up (SIGUSR1)
//! are blocked in every thread (the queue threads inherit the mask) and taken synchronously by
//! the main thread with `sigwait`. A queue thread that ends wakes the main thread with SIGUSR1
//! aimed at it alone (`pthread_kill`), so the device is stopped whatever ended the queue.

/// Why the server stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// SIGTERM or SIGINT (or SIGUSR1 sent from outside).
    Signal(i32),
    /// A queue thread ended (the device was deleted, or the queue failed).
    QueueEnded,
}

fn stop_set() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, exclusively borrowed sigset_t.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGUSR1);
    }
    set
}

/// Block the stop signals in this thread and every thread it starts afterwards.
pub fn block_stop_signals() {
    let set = stop_set();
    // SAFETY: valid set pointer; a null old-set pointer is allowed.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}

/// Wakes the thread that created it out of [`wait_stop_signal`].
#[derive(Clone, Copy)]
pub struct Waker {
    thread: libc::pthread_t,
}

impl Waker {
    /// A waker for the calling thread (which must later call [`wait_stop_signal`]).
    pub fn this_thread() -> Waker {
        // SAFETY: pthread_self has no preconditions.
        Waker { thread: unsafe { libc::pthread_self() } }
    }

    /// Wake the thread; it reports [`Stop::QueueEnded`].
    pub fn wake(&self) {
        // A thread-directed SIGUSR1 is pending on that thread only; `sigwait` tells it from a
        // process-directed one by `si_pid`/`si_code` (SI_TKILL) below.
        // SAFETY: the thread is the server's main thread, alive until every queue thread has
        // been joined (libublk joins them before run_target returns).
        unsafe { libc::pthread_kill(self.thread, libc::SIGUSR1) };
    }
}

/// Wait for a stop request.
pub fn wait_stop_signal() -> Stop {
    let set = stop_set();
    loop {
        // SAFETY: siginfo_t is plain data, filled by sigwaitinfo.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid set and out pointers; the signals are blocked (block_stop_signals).
        let sig = unsafe { libc::sigwaitinfo(&set, &mut info) };
        if sig < 0 {
            continue; // EINTR
        }
        // SAFETY: reading si_pid of a filled siginfo_t; getpid has no preconditions.
        let from_self = unsafe { info.si_pid() == libc::getpid() };
        if sig == libc::SIGUSR1 && info.si_code == libc::SI_TKILL && from_self {
            return Stop::QueueEnded;
        }
        return Stop::Signal(sig);
    }
}
