//! Stacks follow the platform (issue 39, shape 8), and the overflow
//! handler leaves other faults to the program's own handler.
//!
//! - Under `ulimit -s 65536` (a 64 MiB `RLIMIT_STACK`), a task that
//!   recurses 24 MiB deep completes, on a task stack and with task stacks
//!   off (`MLIR_ASYNC_RUNTIME_TASK_STACKS=0`, on a runtime thread): task
//!   stacks and the runtime's threads take their default size from the
//!   limit, as glibc's threads do. Before the fix both died: on a task
//!   stack with the overflow line ("a task overflowed its stack of 8388608
//!   bytes"), with task stacks off with std's stack-overflow report on the
//!   worker thread (SIGABRT), both fixed at 8 MiB. The C++ runtime's pool
//!   threads are glibc's, sized by the limit: the same recursion, in C, in
//!   a task of Debian's LLVM 19 runtime completes under `ulimit -s 65536`
//!   (2026-12-06).
//! - Under the usual 8 MiB the same recursion still overflows its task
//!   stack, with the one-line overflow message and SIGABRT (the C++
//!   runtime: a bare SIGSEGV).
//! - A write nearly 1 MiB below a task's stack (a frame without stack
//!   probes that skipped one page) lands in the guard: the overflow line.
//! - A thread waiting outside the pool with no alternate signal stack
//!   gets one of at least 256 KiB before it runs a task; one it has is
//!   kept.
//! - A SIGSEGV handler the program installed before the runtime started
//!   runs for a fault that is not a task stack's overflow: on the main
//!   thread after a waiting batch, and inside a task on a task stack. (It
//!   passed before the fix too: the chaining existed; the test keeps it.)
//!
//! Each case runs in a child process (this test binary again, the case in
//! an environment variable), the stack limit set between fork and exec.

mod common;

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::time::Duration;

use common::{run_child_with, ChildRun, TokenPtr};
use mlir_async_runtime::abi::*;

const CASE_ENV: &str = "MLIR_ASYNC_RUNTIME_STACKS_CASE";

/// The depth of the recursion: 384 frames of 64 KiB.
const FRAME: usize = 64 << 10;
const DEPTH: usize = (24 << 20) / FRAME;

/// A recursion with a 64 KiB frame per level that the optimizer cannot
/// remove nor turn into a loop: each frame is written, handed to
/// `black_box`, and read after the call below it returns.
#[inline(never)]
fn recurse(depth: usize) -> u64 {
    let mut frame = [0u8; FRAME];
    let frame = std::hint::black_box(&mut frame);
    frame[depth % FRAME] = depth as u8;
    if depth == 0 {
        return u64::from(frame[0]);
    }
    let below = recurse(depth - 1);
    below + u64::from(std::hint::black_box(&*frame)[depth % FRAME])
}

/// Runs the recursion in a task and awaits it.
fn recurse_in_a_task() {
    let token = TokenPtr::new(mlirAsyncRuntimeCreateToken());
    let (h, r) = common::task(move || {
        std::hint::black_box(recurse(DEPTH));
        // SAFETY: the producer's reference.
        unsafe { mlirAsyncRuntimeEmplaceToken(token.get()) };
    });
    mlirAsyncRuntimeExecute(h, r);
    // SAFETY: our reference.
    unsafe {
        mlirAsyncRuntimeAwaitToken(token.get());
        mlirAsyncRuntimeDropRef(token.get().cast(), 1);
    }
}

/// What the program's own handler writes before it exits with 3.
const EMBEDDER_LINE: &str = "embedder: SIGSEGV handler ran";

extern "C" fn embedder_handler(_signal: libc::c_int, _info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    let line = b"embedder: SIGSEGV handler ran\n";
    // SAFETY: async-signal-safe calls on a static buffer.
    unsafe {
        libc::write(2, line.as_ptr().cast(), line.len());
        libc::_exit(3);
    }
}

fn install_embedder_handler() {
    // SAFETY: installs a plain function for SIGSEGV.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = embedder_handler as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGSEGV, &action, std::ptr::null_mut()), 0);
    }
}

/// The current SIGSEGV handler is not the embedder's: the runtime's
/// replaced it (so the case tests the chaining).
fn runtime_handler_installed() -> bool {
    // SAFETY: reads the current action.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGSEGV, std::ptr::null(), &mut action);
        action.sa_sigaction != embedder_handler as *const () as usize
    }
}

/// A plain fault: a load from address 16, outside any mapping and far
/// from every task stack.
fn fault() {
    // SAFETY: not safe at all: it faults, on purpose; the handler exits.
    unsafe {
        std::arch::asm!("mov {0}, qword ptr [{1}]", out(reg) _, in(reg) 16usize);
    }
}

/// The lowest address of the mapping that holds `address`, from
/// `/proc/self/maps`.
fn mapping_start(address: usize) -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
    for line in maps.lines() {
        let range = line.split(' ').next().expect("a range");
        let (lo, hi) = range.split_once('-').expect("lo-hi");
        let (lo, hi) = (usize::from_str_radix(lo, 16).unwrap(), usize::from_str_radix(hi, 16).unwrap());
        if lo <= address && address < hi {
            return lo;
        }
    }
    panic!("{address:#x} is not mapped");
}

/// How far below its stack a task's frame writes in the case
/// `skip-guard`: what the first write of a frame of about 1 MiB without
/// stack probes does when the stack is nearly full.
const SKIP: usize = (1 << 20) - (8 << 10);

/// Queues tasks and awaits each until one ran on this (the main) thread
/// while it waited: a waiting batch on its task stack, for which the
/// runtime prepared the thread (`overflow.rs`, `prepare_thread`). Exits
/// with 60 if none did.
fn run_a_task_on_the_waiting_thread() {
    use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
    static MAIN: AtomicI32 = AtomicI32::new(0);
    static RAN: AtomicBool = AtomicBool::new(false);
    // SAFETY: no preconditions.
    MAIN.store(unsafe { libc::gettid() }, Ordering::SeqCst);
    for _ in 0..200 {
        let token = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        let (h, r) = common::task(move || {
            // SAFETY: no preconditions.
            if unsafe { libc::gettid() } == MAIN.load(Ordering::SeqCst) {
                RAN.store(true, Ordering::SeqCst);
            }
            // SAFETY: the producer's reference.
            unsafe { mlirAsyncRuntimeEmplaceToken(token.get()) };
        });
        mlirAsyncRuntimeExecute(h, r);
        // SAFETY: our reference.
        unsafe {
            mlirAsyncRuntimeAwaitToken(token.get());
            mlirAsyncRuntimeDropRef(token.get().cast(), 1);
        }
        if RAN.load(Ordering::SeqCst) {
            return;
        }
    }
    std::process::exit(60);
}

/// This thread's alternate signal stack.
fn alt_stack() -> libc::stack_t {
    // SAFETY: reads this thread's alternate stack.
    unsafe {
        let mut current: libc::stack_t = std::mem::zeroed();
        assert_eq!(libc::sigaltstack(std::ptr::null(), &mut current), 0);
        current
    }
}

/// Sets this thread's alternate signal stack to `stack` (null: none).
fn set_alt_stack(stack: *mut libc::c_void, size: usize) {
    let flags = if stack.is_null() { libc::SS_DISABLE } else { 0 };
    let new = libc::stack_t { ss_sp: stack, ss_flags: flags, ss_size: size };
    // SAFETY: `stack` is null or a live mapping of `size` bytes that this
    // thread keeps until the process ends.
    assert_eq!(unsafe { libc::sigaltstack(&new, std::ptr::null_mut()) }, 0);
}

#[test]
fn stacks_child() {
    let Ok(case) = std::env::var(CASE_ENV) else { return };
    match case.as_str() {
        "recurse" => recurse_in_a_task(),
        "fault-default" => {
            // SAFETY: the default action for SIGSEGV, as in a C program.
            unsafe { libc::signal(libc::SIGSEGV, libc::SIG_DFL) };
            run_a_task_on_the_waiting_thread();
            // SAFETY: reads the current action.
            let installed = unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                libc::sigaction(libc::SIGSEGV, std::ptr::null(), &mut action);
                action.sa_sigaction != libc::SIG_DFL
            };
            if !installed {
                std::process::exit(61);
            }
            fault();
        }
        "fault-outside" => {
            install_embedder_handler();
            for _ in 0..10 {
                common::execute_and_await();
            }
            if !runtime_handler_installed() {
                std::process::exit(61);
            }
            fault();
        }
        "skip-guard" => {
            let token = TokenPtr::new(mlirAsyncRuntimeCreateToken());
            let (h, r) = common::task(move || {
                let here = 0u8;
                let stack = mapping_start(std::hint::black_box(&here) as *const u8 as usize);
                // SAFETY: not safe: it writes below the task's stack, as a
                // frame without probes that skipped the old one-page guard
                // would; the runtime must catch it.
                unsafe { std::ptr::write_volatile((stack - SKIP) as *mut u8, 1) };
                eprintln!("scenario: a write {SKIP} bytes below the task's stack went unseen");
                // SAFETY: the producer's reference.
                unsafe { mlirAsyncRuntimeEmplaceToken(token.get()) };
            });
            mlirAsyncRuntimeExecute(h, r);
            // SAFETY: our reference.
            unsafe { mlirAsyncRuntimeAwaitToken(token.get()) };
        }
        "alt-stack-given" => {
            // As on a C program's main thread: no alternate stack (std
            // gave the test's thread one).
            set_alt_stack(std::ptr::null_mut(), 0);
            run_a_task_on_the_waiting_thread();
            let given = alt_stack();
            println!("alternate stack: flags {:#x}, {} bytes", given.ss_flags, given.ss_size);
            if given.ss_flags & libc::SS_DISABLE != 0 || given.ss_size < 256 << 10 {
                std::process::exit(62);
            }
        }
        "alt-stack-kept" => {
            let size = 96 << 10;
            // SAFETY: a fresh anonymous mapping, kept for the process.
            let own = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    size,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(own, libc::MAP_FAILED);
            set_alt_stack(own, size);
            run_a_task_on_the_waiting_thread();
            let kept = alt_stack();
            if kept.ss_sp != own || kept.ss_size != size {
                println!("alternate stack replaced: {:?}, {} bytes", kept.ss_sp, kept.ss_size);
                std::process::exit(63);
            }
        }
        "fault-in-task" => {
            install_embedder_handler();
            common::execute_and_await();
            if !runtime_handler_installed() {
                std::process::exit(61);
            }
            let token = TokenPtr::new(mlirAsyncRuntimeCreateToken());
            let (h, r) = common::task(move || {
                fault();
                // SAFETY: the producer's reference (never reached).
                unsafe { mlirAsyncRuntimeEmplaceToken(token.get()) };
            });
            mlirAsyncRuntimeExecute(h, r);
            // SAFETY: our reference.
            unsafe { mlirAsyncRuntimeAwaitToken(token.get()) };
        }
        _ => panic!("unknown case {case}"),
    }
    __mlir_execution_engine_destroy();
    std::process::exit(0);
}

/// Runs `case` in a child whose `RLIMIT_STACK` soft limit is `stack_limit`
/// bytes from its start, as `ulimit -s` in its shell would set it.
fn run_case(case: &str, stack_limit: u64, env: &[(&str, &str)]) -> ChildRun {
    let mut all = vec![(CASE_ENV, case)];
    all.extend_from_slice(env);
    run_child_with("stacks_child", &all, Duration::from_secs(60), |cmd| {
        // SAFETY: between fork and exec, only async-signal-safe calls.
        unsafe {
            cmd.pre_exec(move || {
                let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
                libc::getrlimit(libc::RLIMIT_STACK, &mut limit);
                limit.rlim_cur = stack_limit.min(limit.rlim_max);
                if libc::setrlimit(libc::RLIMIT_STACK, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    })
}

/// The stderr lines of a child, less the test harness's.
fn lines(run: &ChildRun) -> Vec<&str> {
    run.stderr.lines().filter(|l| !l.is_empty()).collect()
}

const MIB: u64 = 1 << 20;

#[test]
fn a_task_recurses_24_mib_deep_under_a_64_mib_stack_limit() {
    let mut failures = Vec::new();
    for (name, env) in [("task stacks", &[][..]), ("task stacks off", &[("MLIR_ASYNC_RUNTIME_TASK_STACKS", "0")][..])] {
        let run = run_case("recurse", 64 * MIB, env);
        if !run.succeeded() {
            failures.push(format!("{name}: {}", run.describe()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn under_an_8_mib_stack_limit_the_recursion_overflows_its_task_stack_with_one_line() {
    let run = run_case("recurse", 8 * MIB, &[]);
    let line = "mlir_async_runtime: a task overflowed its stack of 8388608 bytes; \
                raise MLIR_ASYNC_RUNTIME_TASK_STACK_SIZE (bytes)";
    assert!(
        run.status.and_then(|s| s.signal()) == Some(libc::SIGABRT) && lines(&run) == [line],
        "expected SIGABRT after exactly {line:?}, got {}",
        run.describe()
    );
}

/// A frame of nearly 1 MiB without stack probes (C compiled without
/// `-fstack-clash-protection`, or JIT-compiled MLIR with a large
/// `memref.alloca`) whose first write lands far below the stack: inside
/// the guard, so the overflow line names it. With the old one-page guard
/// that write fell past the guard and the 256 KiB below it that counted:
/// a plain SIGSEGV (seen with the guard set back to one page), or, had
/// another mapping been there, no fault at all.
#[test]
fn a_frame_without_probes_that_skips_a_page_lands_in_the_guard() {
    let run = run_case("skip-guard", 8 * MIB, &[]);
    let line = "mlir_async_runtime: a task overflowed its stack of 8388608 bytes; \
                raise MLIR_ASYNC_RUNTIME_TASK_STACK_SIZE (bytes)";
    assert!(
        run.status.and_then(|s| s.signal()) == Some(libc::SIGABRT) && lines(&run) == [line],
        "expected SIGABRT after exactly {line:?}, got {}",
        run.describe()
    );
}

/// A thread with no alternate signal stack (a C program's main thread)
/// gets one of at least 256 KiB before it runs a task on a task stack
/// while it waits; one it has already is kept. (Before the fix: 64 KiB,
/// "alternate stack: flags 0x0, 65536 bytes"; the kept one was kept
/// already.)
#[test]
fn a_waiting_thread_gets_a_large_alternate_stack_unless_it_has_one() {
    let mut failures = Vec::new();
    for case in ["alt-stack-given", "alt-stack-kept"] {
        let run = run_case(case, 8 * MIB, &[]);
        if !run.succeeded() {
            failures.push(format!("{case}: {}", run.describe()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// With no handler before ours (`SIG_DFL`, a C program), a plain fault
/// still kills the process with SIGSEGV: ours restores the default and
/// the fault repeats into it.
#[test]
fn a_plain_fault_without_a_handler_before_ours_is_a_sigsegv() {
    let run = run_case("fault-default", 8 * MIB, &[]);
    assert_eq!(run.status.and_then(|s| s.signal()), Some(libc::SIGSEGV), "{}", run.describe());
    assert!(lines(&run).is_empty(), "{}", run.describe());
}

#[test]
fn the_programs_segv_handler_installed_first_runs_for_other_faults() {
    let mut failures = Vec::new();
    for case in ["fault-outside", "fault-in-task"] {
        let run = run_case(case, 8 * MIB, &[]);
        if run.status.and_then(|s| s.code()) != Some(3) || lines(&run) != [EMBEDDER_LINE] {
            failures.push(format!("{case}: expected status 3 after {EMBEDDER_LINE:?}, got {}", run.describe()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
