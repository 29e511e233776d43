//! The floating-point environment of a thread (rounding mode, exception
//! masks and flags): a task that a waiting thread runs gets a pool
//! thread's, and the waiting thread gets its own back
//! (`exec/threads/waiter.rs`), as on the C++ runtime, where no task
//! ever runs on a thread that waits.
//!
//! On x86-64 the environment's parts that a program changes are two
//! registers, the x87 control word and SSE's MXCSR; both are read in a few
//! cycles, so the usual case (the caller's control bits are the pool's)
//! costs four reads and no `fesetenv`. Elsewhere, the whole environment is
//! saved and set with `fegetenv`/`fesetenv`.

use std::ffi::c_int;

/// glibc's `fenv_t`, opaque: 32 bytes on x86-64, 8 on AArch64; room for
/// any.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct FenvT([u8; 64]);

extern "C" {
    fn fegetenv(env: *mut FenvT) -> c_int;
    fn fesetenv(env: *const FenvT) -> c_int;
}

fn get() -> FenvT {
    let mut env = FenvT([0; 64]);
    // SAFETY: `env` is larger than and as aligned as a `fenv_t`.
    unsafe { fegetenv(&mut env) };
    env
}

fn set(env: &FenvT) {
    // SAFETY: `env` was filled by `fegetenv`.
    unsafe { fesetenv(env) };
}

/// The environment tasks start with on the pool: the one of the thread
/// that started it, which its threads inherited.
#[derive(Clone, Copy)]
pub(crate) struct PoolEnv {
    env: FenvT,
    #[cfg(target_arch = "x86_64")]
    controls: x86::Controls,
}

impl PoolEnv {
    /// The calling thread's environment (call it where the pool's threads
    /// are started).
    pub(crate) fn capture() -> PoolEnv {
        PoolEnv {
            env: get(),
            #[cfg(target_arch = "x86_64")]
            controls: x86::Controls::read(),
        }
    }

    /// Gives the calling thread this environment until the guard drops,
    /// which gives it back its own.
    #[inline]
    pub(crate) fn enter(&self) -> Entered {
        #[cfg(target_arch = "x86_64")]
        {
            let own = x86::Controls::read();
            if own.same_controls(&self.controls) {
                // The caller's rounding and masks are the pool's: only
                // what a task changes needs undoing.
                return Entered { saved: Saved::Controls(own) };
            }
        }
        let saved = get();
        set(&self.env);
        Entered { saved: Saved::Whole(saved) }
    }
}

enum Saved {
    /// The thread's own control registers: the pool's control bits.
    #[cfg(target_arch = "x86_64")]
    Controls(x86::Controls),
    /// The thread's own environment, replaced by the pool's.
    Whole(FenvT),
}

/// See [`PoolEnv::enter`].
pub(crate) struct Entered {
    saved: Saved,
}

impl Drop for Entered {
    fn drop(&mut self) {
        match &self.saved {
            #[cfg(target_arch = "x86_64")]
            Saved::Controls(own) => own.restore(),
            Saved::Whole(env) => set(env),
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    /// MXCSR's exception flags (sticky, set by operations): not a control.
    const MXCSR_FLAGS: u32 = 0x3f;

    /// The x87 control word and MXCSR.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub(super) struct Controls {
        x87: u16,
        mxcsr: u32,
    }

    impl Controls {
        pub(super) fn read() -> Controls {
            let mut x87: u16 = 0;
            let mut mxcsr: u32 = 0;
            // SAFETY: stores the two registers into the locals; no other
            // effect.
            unsafe {
                std::arch::asm!(
                    "fnstcw word ptr [{x87}]",
                    "stmxcsr dword ptr [{mxcsr}]",
                    x87 = in(reg) &mut x87,
                    mxcsr = in(reg) &mut mxcsr,
                    options(nostack, preserves_flags),
                );
            }
            Controls { x87, mxcsr }
        }

        pub(super) fn same_controls(&self, other: &Controls) -> bool {
            self.x87 == other.x87 && self.mxcsr & !MXCSR_FLAGS == other.mxcsr & !MXCSR_FLAGS
        }

        /// Sets the registers back to these values where a task changed
        /// them (MXCSR's flags included: the caller's are its own).
        pub(super) fn restore(&self) {
            let now = Controls::read();
            if now.x87 != self.x87 {
                // SAFETY: loads a control word this thread had.
                unsafe { std::arch::asm!("fldcw word ptr [{}]", in(reg) &self.x87, options(nostack, preserves_flags)) };
            }
            if now.mxcsr != self.mxcsr {
                // SAFETY: loads an MXCSR value this thread had.
                unsafe { std::arch::asm!("ldmxcsr dword ptr [{}]", in(reg) &self.mxcsr, options(nostack, preserves_flags)) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" {
        fn fegetround() -> c_int;
        fn fesetround(mode: c_int) -> c_int;
    }

    #[cfg(target_arch = "x86_64")]
    const UPWARD: c_int = 0x800;
    #[cfg(target_arch = "x86_64")]
    const TOWARDZERO: c_int = 0xc00;
    #[cfg(target_arch = "aarch64")]
    const UPWARD: c_int = 0x40_0000;
    #[cfg(target_arch = "aarch64")]
    const TOWARDZERO: c_int = 0xc0_0000;

    #[test]
    fn a_thread_enters_the_pools_environment_and_gets_its_own_back() {
        std::thread::spawn(|| {
            // SAFETY: sets and reads this thread's rounding mode.
            unsafe {
                let pool = PoolEnv::capture();
                let nearest = fegetround();
                // The caller's mode differs: the whole environment moves.
                fesetround(UPWARD);
                let entered = pool.enter();
                assert_eq!(fegetround(), nearest);
                fesetround(TOWARDZERO);
                drop(entered);
                assert_eq!(fegetround(), UPWARD);
                // The same mode: only what the task changed is undone.
                fesetround(nearest);
                let entered = pool.enter();
                fesetround(TOWARDZERO);
                drop(entered);
                assert_eq!(fegetround(), nearest);
            }
        })
        .join()
        .unwrap();
    }
}
