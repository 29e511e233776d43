//! The task trace: per-thread event buffers and the Chrome Trace Event
//! JSON writer (`MLIR_ASYNC_RUNTIME_TRACE=<file>`; switch in
//! [`crate::probe::observe`]).
//!
//! Each thread appends to its own chunk of fixed-size events with no lock:
//! it writes the slot, then publishes the new length with a Release store.
//! A chunk is registered in the global list (under [`REGISTRY`]'s lock)
//! when the thread allocates it, once per [`CHUNK_EVENTS`] events; the
//! writer reads, under the same lock, each chunk's published prefix (an
//! Acquire load), so it may run while other threads still record: it sees
//! every event finished before the load, which at destroy (workers joined)
//! is all of them.
//!
//! At most [`MAX_EVENTS`] events are kept per process; later ones are
//! counted and dropped, and the file says how many (`droppedEvents`).
//!
//! Timestamps come from [`clock`]: real time, or logical time under a
//! deterministic schedule, where the file is the same in every replay (its
//! `pid` is then 1, not the process id).
//!
//! File layout: one `thread_name` metadata event ("M") per thread, then a
//! complete event ("X", `ts` and `dur` in microseconds) per task (`cat`
//! `task`, `args.origin` and `args.route`) and per blocking wait of any
//! thread (`cat` `wait`).

use std::cell::{RefCell, UnsafeCell};
use std::io::Write;
use std::mem::MaybeUninit;
use std::path::Path;
use std::sync::Arc;

use crate::base::task::{Origin, Route};
use crate::probe::clock;
use crate::sync::process::{AtomicBool, AtomicU64, AtomicUsize, ForkSafeGuard, ForkSafeLock, Ordering};

/// Events per chunk (24 bytes each).
const CHUNK_EVENTS: usize = 4096;
/// Events kept per process (about 24 MiB of buffers, 100 MB of JSON).
pub const MAX_EVENTS: usize = 1 << 20;
const MAX_CHUNKS: usize = MAX_EVENTS / CHUNK_EVENTS;

const KIND_TASK: u8 = 0;
const KIND_WAIT: u8 = 1;

#[derive(Clone, Copy)]
struct Event {
    start_ns: u64,
    end_ns: u64,
    kind: u8,
    origin: u8,
    route: u8,
}

struct Chunk {
    /// Index of the recording thread in `Registry::threads`.
    thread: usize,
    /// Events `0..len` are written and never change again.
    len: AtomicUsize,
    slots: Box<[UnsafeCell<MaybeUninit<Event>>]>,
}

// SAFETY: a slot is written by the chunk's thread only, before `len`
// covers it (Release); readers only read slots below `len` (Acquire).
unsafe impl Sync for Chunk {}
// SAFETY: as above.
unsafe impl Send for Chunk {}

impl Chunk {
    fn new(thread: usize) -> Chunk {
        Chunk {
            thread,
            len: AtomicUsize::new(0),
            slots: (0..CHUNK_EVENTS).map(|_| UnsafeCell::new(MaybeUninit::uninit())).collect(),
        }
    }

    /// Appends `event`; false when the chunk is full. Owner thread only.
    fn push(&self, event: Event) -> bool {
        // Relaxed: only this thread writes `len`.
        let len = self.len.load(Ordering::Relaxed);
        if len == CHUNK_EVENTS {
            return false;
        }
        // SAFETY: slot `len` is not published yet, so no reader touches
        // it, and only this thread writes.
        unsafe { (*self.slots[len].get()).write(event) };
        // Release: the slot's contents are visible to a reader that sees
        // the new length.
        self.len.store(len + 1, Ordering::Release);
        true
    }

    fn events(&self) -> impl Iterator<Item = Event> + '_ {
        // Acquire: pairs with `push`'s Release.
        let len = self.len.load(Ordering::Acquire);
        // SAFETY: slots below the published length are initialised and
        // never written again.
        self.slots[..len].iter().map(|slot| unsafe { (*slot.get()).assume_init() })
    }
}

struct Registry {
    /// Name of each recording thread, by its index.
    threads: Vec<String>,
    chunks: Vec<Arc<Chunk>>,
}

static REGISTRY: ForkSafeLock<Registry> = ForkSafeLock::new(Registry { threads: Vec::new(), chunks: Vec::new() });
/// Events not kept because [`MAX_EVENTS`] was reached.
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Set once [`MAX_EVENTS`] is reached.
static FULL: AtomicBool = AtomicBool::new(false);

fn registry() -> ForkSafeGuard<'static, Registry> {
    REGISTRY.lock()
}

/// Before `fork`: no other thread may hold the registry's lock in the child.
pub(crate) fn hold_for_fork() {
    REGISTRY.hold_for_fork();
}

/// After `fork`, in the parent and in the child.
pub(crate) fn release_after_fork() {
    REGISTRY.release_after_fork();
}

thread_local! {
    /// This thread's index and current chunk, once it recorded an event.
    static LOCAL: RefCell<Option<(usize, Arc<Chunk>)>> = const { RefCell::new(None) };
}

/// The address of this thread's event buffer slot (the migration check,
/// `exec/threads/migration.rs`). Never inlined, as every read of a
/// thread-local after a task's switch (`sync/mutation.rs`, 8).
#[cfg_attr(feature = "mutation-tls-inline", inline(always))]
#[cfg_attr(not(feature = "mutation-tls-inline"), inline(never))]
pub(crate) fn buffer_address() -> usize {
    crate::sync::tls::fresh(LOCAL.try_with(|local| local as *const _ as usize).unwrap_or(0))
}

/// The calling thread's lane name: its own name, else `main` for the
/// process's initial thread (std in this library never names it: the
/// program's main may not be Rust's, and a Rust program's std is another
/// copy than ours), else `thread N` with N its index in the registry.
fn thread_name(index: usize) -> String {
    if let Some(name) = std::thread::current().name() {
        return name.to_string();
    }
    // SAFETY: gettid and getpid have no preconditions.
    if unsafe { libc::gettid() == libc::getpid() } {
        return "main".to_string();
    }
    format!("thread {index}")
}

fn record(event: Event) {
    let _ = LOCAL.try_with(|local| {
        let mut local = local.borrow_mut();
        if let Some((_, chunk)) = local.as_ref() {
            if chunk.push(event) {
                return;
            }
        }
        // Relaxed: `FULL` only spares the lock once the cap was reached.
        if FULL.load(Ordering::Relaxed) {
            DROPPED.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // First event of this thread, or its chunk is full: one lock.
        let mut reg = registry();
        if reg.chunks.len() >= MAX_CHUNKS {
            FULL.store(true, Ordering::Relaxed);
            DROPPED.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let thread = match local.as_ref() {
            Some((thread, _)) => *thread,
            None => {
                let name = thread_name(reg.threads.len());
                reg.threads.push(name);
                reg.threads.len() - 1
            }
        };
        let chunk = Arc::new(Chunk::new(thread));
        reg.chunks.push(Arc::clone(&chunk));
        drop(reg);
        chunk.push(event);
        *local = Some((thread, chunk));
    });
}

/// Records a task that ran from `start_ns` to `end_ns` on this thread.
pub(crate) fn task(start_ns: u64, end_ns: u64, origin: Origin, route: Route) {
    record(Event { start_ns, end_ns, kind: KIND_TASK, origin: origin as u8, route: route as u8 });
}

/// Records a blocking wait of this thread.
pub(crate) fn wait(start_ns: u64, end_ns: u64) {
    record(Event { start_ns, end_ns, kind: KIND_WAIT, origin: 0, route: 0 });
}

/// Microseconds with nanosecond precision, as the format expects.
fn micros(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// Writes every event recorded so far as Chrome Trace Event JSON.
pub fn write_json(out: &mut impl Write) -> std::io::Result<()> {
    let reg = registry();
    // Under a deterministic schedule the trace is the same in every
    // replay: no process id, which differs from run to run.
    let pid = if clock::was_logical() { 1 } else { std::process::id() };
    // Thread indices start at 1: some viewers treat tid 0 specially.
    writeln!(out, "{{\"displayTimeUnit\":\"ns\",")?;
    writeln!(out, "\"otherData\":{{\"droppedEvents\":{}}},", DROPPED.load(Ordering::Relaxed))?;
    writeln!(out, "\"traceEvents\":[")?;
    writeln!(
        out,
        "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":0,\"args\":{{\"name\":\"mlir_async_runtime\"}}}}"
    )?;
    for (index, name) in reg.threads.iter().enumerate() {
        let name: String = name.chars().filter(|c| *c != '"' && *c != '\\' && !c.is_control()).collect();
        writeln!(
            out,
            ",{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{},\"args\":{{\"name\":\"{name}\"}}}}",
            index + 1
        )?;
    }
    for chunk in &reg.chunks {
        let tid = chunk.thread + 1;
        for event in chunk.events() {
            let ts = micros(event.start_ns);
            let dur = micros(event.end_ns.saturating_sub(event.start_ns));
            if event.kind == KIND_TASK {
                writeln!(
                    out,
                    ",{{\"name\":\"task\",\"cat\":\"task\",\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\
                     \"ts\":{ts},\"dur\":{dur},\"args\":{{\"origin\":\"{}\",\"route\":\"{}\"}}}}",
                    Origin::from_u8(event.origin).name(),
                    Route::from_u8(event.route).name()
                )?;
            } else {
                writeln!(
                    out,
                    ",{{\"name\":\"wait\",\"cat\":\"wait\",\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\
                     \"ts\":{ts},\"dur\":{dur}}}"
                )?;
            }
        }
    }
    writeln!(out, "]}}")?;
    Ok(())
}

/// Writes the whole trace so far to `path`.
pub(super) fn write_file(path: &Path) {
    let result = std::fs::File::create(path).and_then(|file| {
        let mut out = std::io::BufWriter::new(file);
        write_json(&mut out)?;
        out.flush()
    });
    if let Err(e) = result {
        crate::sync::misuse::warn(&format!("cannot write trace {}: {e}", path.display()));
    }
}
