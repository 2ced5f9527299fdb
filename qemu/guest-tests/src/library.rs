// SPDX-License-Identifier: MIT OR Apache-2.0
//! libnvmedl in the guest: the Rust API in this process, the C example, the `nvmedl` CLI and
//! a short verified `nvmedl-bench` run on each core, 4 threads pinned to 4 cores writing and
//! reading back distinct ranges, and a ptrace count of the system calls in the I/O loop.
//! Needs the fake device (cases fail, never hang, without it).
//!
//! Size per core of the 4-core runs: `DNVM_LIB_MB` (default 8; `make test-64m` uses 64).

use std::time::{Duration, Instant};

use nvmedl::{Buffer, Device, Error, HandleOptions, Request};

use crate::sys::sh;
use crate::tap::{check, eq, Case, Tap};

/// Pin the calling thread to CPU `cpu` (the paper's one-thread-per-core pattern).
fn pin(cpu: u32) -> Result<(), String> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET stays inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!("sched_setaffinity(cpu {cpu}): {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

fn mb_per_core() -> u64 {
    std::env::var("DNVM_LIB_MB").ok().and_then(|v| v.parse().ok()).filter(|&v| v > 0).unwrap_or(8)
}

fn word(off: u64) -> u64 {
    off.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed_1234
}

fn fill(b: &mut Buffer, lba: u64) {
    for (i, w) in b.as_mut_slice().chunks_exact_mut(8).enumerate() {
        w.copy_from_slice(&word(lba * 512 + 8 * i as u64).to_le_bytes());
    }
}

/// Index of the first 8-byte word that differs from the pattern, if any.
fn verify(b: &Buffer, lba: u64) -> Option<usize> {
    b.as_slice()
        .chunks_exact(8)
        .enumerate()
        .position(|(i, w)| u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]) != word(lba * 512 + 8 * i as u64))
}

fn dev() -> Result<Device, String> {
    let d = Device::open().map_err(|e| format!("open /dev/directnvm: {e}"))?;
    check(d.info().flags & directnvm_abi::DNVM_INFO_READY != 0, "controller not ready")?;
    Ok(d)
}

fn api_basics() -> Case {
    let d = dev()?;
    let mut h = d.handle(0).map_err(|e| format!("handle 0: {e}"))?;
    let mut b = h.buf_alloc(8192).map_err(|e| e.to_string())?;
    fill(&mut b, 4096);
    h.write(&b, 4096).map_err(|e| format!("write: {e}"))?;
    b.as_mut_slice().fill(0);
    h.read(&b, 4096).map_err(|e| format!("read: {e}"))?;
    check(verify(&b, 4096).is_none(), "read-back mismatch")?;
    eq(h.submit(Request::read(&b, 3)).err(), Some(Error::Misaligned), "unaligned LBA")?;
    eq(h.submit(Request::read(&b, h.capacity_lbas())).err(), Some(Error::InvalidLba), "LBA past the end")?;
    eq(h.submit(Request::read(&b, 0).len(0)).err(), Some(Error::BadLength), "zero length")?;
    eq(d.handle(0).err(), Some(Error::Busy), "second claim of core 0")?;
    let mut out = [nvmedl::Completion { tag: 0, result: Ok(()) }; 4];
    eq(h.poll(&mut out), 0, "poll with nothing pending")?;
    if h.revision().has_flush() {
        h.flush().map_err(|e| format!("flush: {e}"))?;
    } else {
        eq(h.flush().err(), Some(Error::Revision), "flush on rev 1")?;
    }
    Ok(())
}

/// 4 threads, one per core, each writing then verifying its own `mb` MiB range.
fn four_cores_rust(mb: u64) -> Case {
    let d = dev()?;
    let cores = d.cores().min(4);
    let per_core = mb << 20;
    check(u64::from(cores) * per_core / 512 <= d.info().capacity_lbas, "namespace too small")?;
    let t0 = Instant::now();
    let threads: Vec<_> = (0..cores)
        .map(|core| {
            let d = d.clone();
            std::thread::spawn(move || -> Result<(), String> {
                pin(core)?;
                // SAFETY: sched_getcpu has no preconditions.
                let cpu = unsafe { libc::sched_getcpu() };
                check(cpu == core as i32, format!("thread for core {core} runs on CPU {cpu}"))?;
                let opts = HandleOptions { timeout: Duration::from_secs(10), ..HandleOptions::default() };
                let mut h = d.handle_with(core, opts).map_err(|e| format!("core {core}: {e}"))?;
                let chunk = 128 * 1024usize;
                let depth = 8usize;
                let mut bufs: Vec<Buffer> = (0..depth).map(|_| h.buf_alloc(chunk)).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
                let base = u64::from(core) * per_core / 512;
                let rounds = (per_core as usize).div_ceil(chunk * depth);
                for write in [true, false] {
                    for r in 0..rounds {
                        let lba = |i: usize| base + ((r * depth + i) * chunk / 512) as u64;
                        for (i, b) in bufs.iter_mut().enumerate() {
                            if write {
                                fill(b, lba(i));
                            }
                            let req = if write { Request::write(b, lba(i)) } else { Request::read(b, lba(i)) };
                            h.submit(req.tag(i as u64)).map_err(|e| format!("core {core}: submit: {e}"))?;
                        }
                        h.drain().map_err(|e| format!("core {core}: drain: {e}"))?;
                        let mut out = [nvmedl::Completion { tag: 0, result: Ok(()) }; 8];
                        let mut got = 0;
                        while got < depth {
                            let n = h.poll(&mut out);
                            for c in &out[..n] {
                                c.result.map_err(|e| format!("core {core}: LBA {}: {e}", lba(c.tag as usize)))?;
                            }
                            got += n;
                        }
                        if !write {
                            for (i, b) in bufs.iter().enumerate() {
                                if let Some(w) = verify(b, lba(i)) {
                                    return Err(format!("core {core}: mismatch at LBA {} word {w}", lba(i)));
                                }
                            }
                        }
                    }
                }
                Ok(())
            })
        })
        .collect();
    for t in threads {
        t.join().map_err(|_| "thread panicked".to_string())??;
    }
    let s = t0.elapsed().as_secs_f64();
    println!(
        "# rust 4-core: {} MiB written+verified per core in {s:.2} s ({:.1} MB/s total)",
        mb,
        (2 * u64::from(cores) * per_core) as f64 / s / 1e6
    );
    Ok(())
}

/// Run `cmd` in the shell; its output, or an error with the output's last lines.
pub fn run_ok(cmd: &str) -> Result<String, String> {
    let (ok, out) = sh(cmd);
    if ok {
        Ok(out)
    } else {
        Err(format!("`{cmd}` failed: {}", out.lines().rev().take(3).collect::<Vec<_>>().join(" | ")))
    }
}

fn cli() -> Case {
    let out = run_ok("/bin/nvmedl info")?;
    check(out.contains("ready           true"), format!("info: {out}"))?;
    run_ok("/bin/nvmedl identify")?;
    run_ok("/bin/nvmedl layout")?;
    run_ok("/bin/busybox dd if=/dev/urandom of=/tmp/lib-in bs=4096 count=33 2>/dev/null")?;
    run_ok("/bin/nvmedl write 1 65536 /tmp/lib-in")?;
    run_ok("/bin/nvmedl verify 1 65536 /tmp/lib-in")?;
    let quiet = run_ok("/bin/nvmedl read 1 65536 135168 /tmp/lib-out")?;
    check(!quiet.contains("MiB ("), format!("no progress line when stderr is not a terminal: {quiet}"))?;
    run_ok("/bin/busybox cmp /tmp/lib-in /tmp/lib-out")?;
    let loud = run_ok("/bin/nvmedl --progress always read 1 65536 135168 /tmp/lib-out")?;
    check(loud.contains("read 0.1/0.1 MiB (100%)"), format!("--progress always prints the final progress line: {loud}"))?;
    let (ok, _) = sh("/bin/nvmedl verify 1 65544 /tmp/lib-in");
    check(!ok, "verify at a shifted LBA must fail")?;
    Ok(())
}

fn bench(core: u32) -> Case {
    let out = run_ok(&format!("/bin/nvmedl-bench --rw mixed --cores {core} --iodepth 32 --ios 3000 --size 4M --verify --json"))?;
    check(out.contains("\"ok\":true"), format!("bench: {out}"))?;
    println!("# bench core {core}: {}", out.lines().find(|l| l.starts_with('{')).unwrap_or("").chars().take(200).collect::<String>());
    Ok(())
}

fn c_example(pages: u64, cores: u32) -> Case {
    let out = run_ok(&format!("/bin/dlexample {pages} {cores} 1 64"))?;
    for l in out.lines() {
        println!("# dlexample: {l}");
    }
    check(out.matches("verify ok").count() == 2, "dlexample did not verify both phases")
}

/// The standard figures of `make bench-guest`. The four-core runs come twice: spinning (the
/// library default) and with the adaptive backoff of docs/performance.md §4 (spin 10 µs, no
/// yield phase, then sleep), which gives the vCPUs that share a host core back to the others.
const FIGURE_RUNS: [&str; 10] = [
    "--rw rand-read --cores 0 --iodepth 1 --size 8M",
    "--rw rand-read --cores 0 --iodepth 32 --size 8M",
    "--rw rand-read --cores 0,1,2,3 --iodepth 32 --size 8M",
    "--rw rand-read --cores 0,1,2,3 --iodepth 32 --size 8M --backoff adaptive --backoff-spin-us 10 --backoff-yield-us 0",
    "--rw seq-read --cores 0 --bs 128k --iodepth 32 --size 16M",
    "--rw seq-read --cores 0 --bs 128k --iodepth 64 --size 16M --batch 16",
    "--rw seq-read --cores 0,1,2,3 --bs 128k --iodepth 32 --size 16M",
    "--rw seq-read --cores 0,1,2,3 --bs 128k --iodepth 32 --size 16M --backoff adaptive --backoff-spin-us 10 --backoff-yield-us 0",
    "--rw seq-write --cores 0 --bs 128k --iodepth 32 --size 16M",
    "--rw mixed --cores 0,1,2,3 --iodepth 32 --size 8M --verify",
];

/// Informational figures, `seconds` per run (the case passes when every run completes
/// without error): 1 s per run in the suite, 5 s in `dnvm-guest-lab libbench`.
/// `DNVM_BENCH_RUNS` replaces the standard runs: runs separated by `:`, the words of one run
/// by `+` (it travels on the kernel command line), e.g.
/// `--rw+seq-read+--bs+128k+--iodepth+128:--rw+rand-read+--iodepth+1`.
pub fn figures(seconds: u32) -> Case {
    let custom: Option<Vec<String>> =
        std::env::var("DNVM_BENCH_RUNS").ok().map(|v| v.split(':').filter(|r| !r.is_empty()).map(|r| r.replace('+', " ")).collect());
    let runs: Vec<String> = custom.unwrap_or_else(|| FIGURE_RUNS.iter().map(|r| r.to_string()).collect());
    for args in &runs {
        let out = run_ok(&format!("/bin/nvmedl-bench {args} --runtime {seconds}"))?;
        let total = out.lines().find(|l| l.starts_with("total:")).unwrap_or("");
        let lat = out.lines().find(|l| l.starts_with("latency")).unwrap_or("");
        let cpu = out.lines().find(|l| l.starts_with("cpu:")).unwrap_or("");
        println!("# nvmedl-bench {args} --runtime {seconds}: {total}; {lat}; {cpu}");
    }
    Ok(())
}

/// Run the library cases.
pub fn run(t: &mut Tap) {
    let mb = mb_per_core();
    t.case("library: Rust API basics and bad inputs", api_basics);
    t.case("library: C example (dlexample) 1 core", || c_example(256, 1));
    t.case("library: nvmedl CLI info/identify/layout/write/verify/read", cli);
    for core in 0..4 {
        t.case(&format!("library: verified nvmedl-bench on core {core}"), || bench(core));
    }
    t.case(&format!("library: 4 threads x 4 cores, {mb} MiB each, verified (Rust API)"), || four_cores_rust(mb));
    // The C example moves ranges larger than the data slice through a window buffer.
    t.case(&format!("library: 4 threads x 4 cores, {mb} MiB each, verified (C example)"), || c_example((mb << 20) / 4096, 4));
    t.case("library: zero syscalls in the I/O loop (ptrace count over 100k I/Os)", syscalls_in_io_loop);
    t.case("library: nvmedl-bench figures (informational)", || figures(1));
}

// ------------------------------------------------------------------------------------------
// System calls of the I/O path, counted with ptrace (the guest has no strace).
//
// The tracer forks `nvmedl-bench --syscall-markers`, follows every thread (PTRACE_O_TRACECLONE)
// through syscall-stops (PTRACE_SYSCALL + PTRACE_GET_SYSCALL_INFO) and counts, per thread, the
// system calls between the job's two marker calls `prctl(SYSCALL_MARK, 1)` and
// `prctl(SYSCALL_MARK, 2)`, which bracket the timed I/O loop.

/// `nvmedl-bench`'s marker (`SYSCALL_MARK` in userspace/tools/src/bench_run.rs).
const SYSCALL_MARK: u64 = 0x444e_564d;
const PTRACE_GET_SYSCALL_INFO: libc::c_uint = 0x420e;
const SYSCALL_INFO_ENTRY: u8 = 1;

/// `struct ptrace_syscall_info` (include/uapi/linux/ptrace.h), entry view.
#[repr(C)]
#[derive(Default)]
struct SyscallInfo {
    op: u8,
    pad: [u8; 3],
    arch: u32,
    ip: u64,
    sp: u64,
    nr: u64,
    args: [u64; 6],
    ret_data: u32,
    pad2: u32,
}

/// What the tracer saw.
#[derive(Default, Debug)]
struct SyscallCount {
    /// Every system call of every thread (setup included).
    total: u64,
    /// System calls between a thread's begin and end markers.
    in_loop: u64,
    /// Syscall numbers seen in the loop (first few), for the report.
    in_loop_nrs: Vec<u64>,
    begins: u32,
    ends: u32,
    exit_status: i32,
}

/// Run `argv` under ptrace and count its system calls (bounded by `limit`).
fn count_syscalls(argv: &[&str], limit: Duration) -> Result<SyscallCount, String> {
    use std::collections::HashMap;
    use std::ffi::CString;
    let cargs: Vec<CString> = argv.iter().map(|a| CString::new(*a).unwrap()).collect();
    let mut cptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
    cptrs.push(std::ptr::null());
    let devnull = CString::new("/dev/null").unwrap();
    // SAFETY: fork in a process whose other threads have all been joined; the child only calls
    // async-signal-safe functions (open, dup2, ptrace, raise, execv, _exit) on memory prepared
    // before.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(format!("fork: {}", std::io::Error::last_os_error()));
    }
    if child == 0 {
        // SAFETY: see above; the argument vector is NULL-terminated.
        unsafe {
            // Keep the TAP output clean: the bench's report goes to /dev/null.
            let fd = libc::open(devnull.as_ptr(), libc::O_WRONLY);
            if fd >= 0 {
                libc::dup2(fd, 1);
            }
            libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0);
            libc::raise(libc::SIGSTOP);
            libc::execv(cptrs[0], cptrs.as_ptr());
            libc::_exit(127);
        }
    }
    let kill_child = || {
        // SAFETY: kill of our own child.
        unsafe { libc::kill(child, libc::SIGKILL) };
    };
    let t0 = Instant::now();
    let mut c = SyscallCount::default();
    // Per thread: inside the marked loop?
    let mut in_loop: HashMap<i32, bool> = HashMap::new();
    let mut first = true;
    loop {
        let mut status = 0;
        // SAFETY: plain waitpid on our tracees.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL | libc::WNOHANG) };
        if pid == 0 {
            if t0.elapsed() > limit {
                kill_child();
                // SAFETY: reap it.
                unsafe { libc::waitpid(child, &mut status, libc::__WALL) };
                return Err(format!("traced run did not finish within {limit:?}"));
            }
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        if pid < 0 {
            return Err(format!("waitpid: {}", std::io::Error::last_os_error()));
        }
        if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
            in_loop.remove(&pid);
            if pid == child {
                c.exit_status = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) };
                return Ok(c);
            }
            continue;
        }
        if !libc::WIFSTOPPED(status) {
            continue;
        }
        let sig = libc::WSTOPSIG(status);
        let mut inject = 0;
        if first {
            // The child's own SIGSTOP before exec: set the options once.
            first = false;
            let opts = libc::PTRACE_O_TRACESYSGOOD | libc::PTRACE_O_TRACECLONE | libc::PTRACE_O_TRACEEXEC | libc::PTRACE_O_EXITKILL;
            // SAFETY: the tracee is stopped.
            if unsafe { libc::ptrace(libc::PTRACE_SETOPTIONS, pid, 0, opts as libc::c_long) } != 0 {
                kill_child();
                return Err(format!("PTRACE_SETOPTIONS: {}", std::io::Error::last_os_error()));
            }
        } else if sig == libc::SIGTRAP | 0x80 {
            let mut info = SyscallInfo::default();
            // SAFETY: the tracee is in a syscall-stop; the kernel writes at most the size given.
            let r =
                unsafe { libc::ptrace(PTRACE_GET_SYSCALL_INFO, pid, std::mem::size_of::<SyscallInfo>(), &mut info as *mut SyscallInfo) };
            if r <= 0 {
                kill_child();
                return Err(format!("PTRACE_GET_SYSCALL_INFO: {}", std::io::Error::last_os_error()));
            }
            if info.op == SYSCALL_INFO_ENTRY {
                c.total += 1;
                let inside = in_loop.entry(pid).or_insert(false);
                if info.nr == libc::SYS_prctl as u64 && info.args[0] == SYSCALL_MARK {
                    match info.args[1] {
                        1 => {
                            *inside = true;
                            c.begins += 1;
                        }
                        2 => {
                            *inside = false;
                            c.ends += 1;
                        }
                        _ => {}
                    }
                } else if *inside {
                    c.in_loop += 1;
                    if c.in_loop_nrs.len() < 8 {
                        c.in_loop_nrs.push(info.nr);
                    }
                }
            }
        } else if sig == libc::SIGTRAP && status >> 16 != 0 {
            // PTRACE_EVENT_CLONE / EXEC stop: nothing to deliver.
        } else if sig == libc::SIGSTOP {
            // A new thread's attach stop.
        } else {
            inject = sig;
        }
        // SAFETY: the tracee is stopped; resume it to the next syscall-stop.
        unsafe { libc::ptrace(libc::PTRACE_SYSCALL, pid, 0, inject as libc::c_long) };
    }
}

fn syscalls_in_io_loop() -> Case {
    const IOS: &str = "100000";
    let bench =
        ["/bin/nvmedl-bench", "--rw", "rand-read", "--cores", "0", "--iodepth", "32", "--size", "8M", "--ios", IOS, "--syscall-markers"];
    let t0 = Instant::now();
    let c = count_syscalls(&bench, Duration::from_secs(300))?;
    println!(
        "# syscalls: nvmedl-bench rand-read QD32 {IOS} I/Os (yield off): {} in the I/O loop, {} in the whole process (setup, threads, exit); {:.1} s",
        c.in_loop, c.total, t0.elapsed().as_secs_f64()
    );
    eq(c.exit_status, 0, "nvmedl-bench exit status")?;
    eq((c.begins, c.ends), (1, 1), "marker calls (begin, end)")?;
    check(c.total > 20, format!("the tracer saw only {} syscalls in the whole run", c.total))?;
    eq(c.in_loop, 0, &format!("syscalls in the I/O loop (numbers {:?})", c.in_loop_nrs))?;
    // Positive control: with the yield option on, the same loop makes system calls
    // (sched_yield) and the counter must see them.
    let mut polite = bench.to_vec();
    polite[10] = "2000";
    polite.extend(["--yield", "1"]);
    let c2 = count_syscalls(&polite, Duration::from_secs(120))?;
    println!("# syscalls: control run with --yield 1 (2000 I/Os): {} in the I/O loop (numbers {:?})", c2.in_loop, c2.in_loop_nrs);
    eq(c2.exit_status, 0, "nvmedl-bench --yield exit status")?;
    check(c2.in_loop > 0, "control run: the counter saw no sched_yield in the loop")?;
    check(
        c2.in_loop_nrs.iter().all(|&n| n == libc::SYS_sched_yield as u64),
        format!("control run: unexpected syscalls {:?}", c2.in_loop_nrs),
    )
}
