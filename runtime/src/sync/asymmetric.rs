//! Asymmetric fences: a Dekker pair whose one side runs at every call
//! (an `Execute` from outside entering its instance's gate) and whose other
//! side runs once in a long while (the destroy hook closing that gate). The
//! frequent side issues [`light`], a compiler fence; the rare side issues
//! [`heavy`], Linux's `membarrier` (private expedited), which makes every
//! running thread of the process execute a full barrier, as if each light
//! side had been a `SeqCst` fence. This is the pairing of the kernel's
//! `membarrier(2)` page, of liburcu and of folly's
//! `asymmetricLightBarrier`/`asymmetricHeavyBarrier`.
//!
//! The command needs the process registered for it first. Registering
//! costs half a microsecond in a process with one thread, and an RCU grace
//! period (11-32 ms, measured on these VMs) in one with several. [`prepare`]
//! (at a runner's init hook, `__mlir_execution_engine_init`, and at the
//! first instance) registers at once in a process with one thread (a
//! program linked ahead of time); in any other it leaves the registration
//! to the first pool thread that finds nothing to do ([`register_pending`]):
//! no thread of its own (a program that counts its threads sees the
//! runtime's), and no caller or task waits for the grace period. Until
//! registration succeeds, and for good where it fails (no `membarrier`, a
//! seccomp filter), [`light`] is a `SeqCst` fence, as before. A
//! registration is inherited by a forked child and reset only by `exec`.
//!
//! Why not a crate: `membarrier` and `membarrier2` register from a load-time
//! constructor (11 ms or more inside a `dlopen` from a threaded runner),
//! panic when the system call fails, and fall back on x86 to an `mprotect`
//! barrier that `mlock`s a page and aborts the process at load when
//! `RLIMIT_MEMLOCK` refuses it.
//!
//! Under loom and ThreadSanitizer (which models neither `membarrier` nor
//! compiler fences) both sides are `SeqCst` fences, as a model needs.

#[cfg(any(loom, mlir_async_tsan, not(target_os = "linux")))]
mod imp {
    use crate::sync::{fence, Ordering};

    #[inline(always)]
    pub(crate) fn light() {
        fence(Ordering::SeqCst);
    }

    pub(crate) fn heavy() {
        fence(Ordering::SeqCst);
    }

    pub(crate) fn prepare() {}

    pub(crate) fn register_pending() {}
}

#[cfg(all(not(loom), not(mlir_async_tsan), target_os = "linux"))]
mod imp {
    use std::sync::atomic::{compiler_fence, fence, AtomicU8, Ordering};

    /// Not asked yet: both sides are `SeqCst` fences.
    const FENCES: u8 = 0;
    /// A registration is under way.
    const REGISTERING: u8 = 1;
    /// Registered: the light side is a compiler fence.
    const REGISTERED: u8 = 2;
    /// Left to the first pool thread (`register_pending`).
    const PENDING: u8 = 3;
    /// Refused by the kernel: fences for good, and no later instance asks
    /// again (each ask reads `/proc` and makes two system calls).
    const UNAVAILABLE: u8 = 4;

    static STATE: AtomicU8 = AtomicU8::new(FENCES);

    fn membarrier(cmd: libc::c_int) -> bool {
        // SAFETY: membarrier(cmd, flags = 0, cpu_id = 0) reads no memory of
        // ours.
        unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0 as libc::c_uint, 0 as libc::c_int) == 0 }
    }

    #[inline(always)]
    pub(crate) fn light() {
        // Acquire: the loads after this one (the other half of the Dekker
        // pair) stay after it, so a light side that skips its fence does so
        // only once the registration is complete, and a heavy side reaches
        // it from then on.
        if STATE.load(Ordering::Acquire) == REGISTERED {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
    }

    pub(crate) fn heavy() {
        fence(Ordering::SeqCst);
        // Always tried, whatever `STATE` this thread sees: it is refused
        // (EPERM) only while the kernel has not registered the process, and
        // then no light side has skipped its fence yet (`REGISTERED` is
        // stored after the registration returns).
        membarrier(libc::MEMBARRIER_CMD_PRIVATE_EXPEDITED);
    }

    /// Registers at once in a process with one thread, else leaves it to
    /// [`register_pending`]; once per process.
    pub(crate) fn prepare() {
        if STATE.compare_exchange(FENCES, REGISTERING, Ordering::Relaxed, Ordering::Relaxed).is_err() {
            return;
        }
        if single_threaded() {
            register();
        } else {
            STATE.store(PENDING, Ordering::Relaxed);
        }
    }

    /// The registration [`prepare`] left, if any: on an idle pool thread
    /// (the grace period of a process with threads).
    pub(crate) fn register_pending() {
        // A load first: pool threads call this at each of their idle waits.
        if STATE.load(Ordering::Relaxed) == PENDING
            && STATE.compare_exchange(PENDING, REGISTERING, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            register();
        }
    }

    /// True when the kernel offers the private expedited command.
    pub(super) fn supported() -> bool {
        // SAFETY: as in `membarrier`.
        let query =
            unsafe { libc::syscall(libc::SYS_membarrier, libc::MEMBARRIER_CMD_QUERY, 0 as libc::c_uint, 0 as libc::c_int) };
        let wanted = (libc::MEMBARRIER_CMD_PRIVATE_EXPEDITED | libc::MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) as libc::c_long;
        query >= 0 && query & wanted == wanted
    }

    fn register() {
        let registered = supported() && membarrier(libc::MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
        // Release: pairs with `light`'s Acquire.
        STATE.store(if registered { REGISTERED } else { UNAVAILABLE }, Ordering::Release);
    }

    /// True when the process has one thread (`/proc/self/stat`, field 20),
    /// where registering costs no grace period.
    pub(super) fn single_threaded() -> bool {
        let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
            return false;
        };
        // The command name (field 2) is in parentheses and may hold spaces:
        // count from after its closing one (field 3 is the first there).
        let Some(rest) = stat.rfind(')').map(|at| &stat[at + 1..]) else {
            return false;
        };
        rest.split_whitespace().nth(17) == Some("1")
    }

    #[cfg(test)]
    pub(super) fn registered() -> bool {
        STATE.load(Ordering::Acquire) == REGISTERED
    }
}

pub(crate) use imp::{heavy, light, prepare, register_pending};

#[cfg(all(test, not(loom), not(mlir_async_tsan), target_os = "linux"))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// Dekker's pattern across the two sides, round after round: the
    /// light side stores its flag and reads the heavy side's; the heavy
    /// side stores its flag and reads the light side's. Never do both miss.
    #[test]
    fn the_two_sides_never_both_miss() {
        prepare();
        register_pending();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !imp::registered() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Where the kernel has the command (Linux 4.14 and later, outside a
        // seccomp filter that denies it), the registration succeeds.
        assert_eq!(imp::registered(), imp::supported(), "registered against what the kernel offers");
        const ROUNDS: usize = 10_000;
        const UNSEEN: usize = usize::MAX;
        let light_flag = Arc::new(AtomicUsize::new(0));
        let heavy_flag = Arc::new(AtomicUsize::new(0));
        let light_saw: Arc<Vec<AtomicUsize>> = Arc::new((0..=ROUNDS).map(|_| AtomicUsize::new(UNSEEN)).collect());
        let go = Arc::new(AtomicUsize::new(0));
        let light_side = {
            let (light_flag, heavy_flag, light_saw, go) =
                (light_flag.clone(), heavy_flag.clone(), light_saw.clone(), go.clone());
            std::thread::spawn(move || {
                for round in 1..=ROUNDS {
                    while go.load(Ordering::Acquire) < round {
                        std::hint::spin_loop();
                    }
                    light_flag.store(round, Ordering::Relaxed);
                    light();
                    light_saw[round].store(heavy_flag.load(Ordering::Relaxed), Ordering::Release);
                }
            })
        };
        for round in 1..=ROUNDS {
            go.store(round, Ordering::Release);
            heavy_flag.store(round, Ordering::Relaxed);
            heavy();
            let heavy_saw = light_flag.load(Ordering::Relaxed);
            let saw = loop {
                let saw = light_saw[round].load(Ordering::Acquire);
                if saw != UNSEEN {
                    break saw;
                }
                std::hint::spin_loop();
            };
            assert!(heavy_saw >= round || saw >= round, "round {round}: both sides missed the other");
        }
        light_side.join().unwrap();
    }

    #[test]
    fn a_process_with_threads_is_not_single_threaded() {
        let _other = std::thread::spawn(|| std::thread::sleep(Duration::from_millis(200)));
        assert!(!imp::single_threaded());
    }
}
