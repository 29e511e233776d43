//! Stage 3, load: the runtime and the other shared libraries loaded with
//! libloading, their runner init hooks called (the destroy hooks when the
//! [`Libraries`] are dropped), the introspection functions found, and the
//! program's external names resolved (libraries first, in command-line
//! order with the runtime first, then the process).

use crate::error::{Error, Result};
use libloading::os::unix::{Library as RawLibrary, RTLD_GLOBAL, RTLD_NOW};
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};

/// The upstream names every async runtime exports (besides the hooks).
pub const RUNTIME_SYMBOLS: &[&str] = &[
    "mlirAsyncRuntimeAddRef",
    "mlirAsyncRuntimeDropRef",
    "mlirAsyncRuntimeCreateToken",
    "mlirAsyncRuntimeCreateValue",
    "mlirAsyncRuntimeCreateGroup",
    "mlirAsyncRuntimeEmplaceToken",
    "mlirAsyncRuntimeEmplaceValue",
    "mlirAsyncRuntimeSetTokenError",
    "mlirAsyncRuntimeSetValueError",
    "mlirAsyncRuntimeIsTokenError",
    "mlirAsyncRuntimeIsValueError",
    "mlirAsyncRuntimeIsGroupError",
    "mlirAsyncRuntimeAwaitToken",
    "mlirAsyncRuntimeAwaitValue",
    "mlirAsyncRuntimeAwaitAllInGroup",
    "mlirAsyncRuntimeExecute",
    "mlirAsyncRuntimeGetValueStorage",
    "mlirAsyncRuntimeAddTokenToGroup",
    "mlirAsyncRuntimeAwaitTokenAndExecute",
    "mlirAsyncRuntimeAwaitValueAndExecute",
    "mlirAsyncRuntimeAwaitAllInGroupAndExecute",
    "mlirAsyncRuntimGetNumWorkerThreads",
    "mlirAsyncRuntimePrintCurrentThreadId",
];

/// `RustMlirAsyncRuntimeStats` of docs/introspection-abi.md.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub live_tokens: i64,
    pub live_values: i64,
    pub live_groups: i64,
    pub tasks_in_flight: i64,
}

impl Stats {
    pub fn live(&self) -> i64 {
        self.live_tokens + self.live_values + self.live_groups
    }
}

/// Our runtime's introspection functions (the C++ runtime has none).
#[derive(Clone, Copy)]
pub struct Introspection {
    stats_fn: unsafe extern "C" fn(*mut Stats),
    wait_idle_fn: unsafe extern "C" fn(u64) -> bool,
    /// Deterministic schedules (absent from older builds of ours).
    schedules: Option<Schedules>,
}

/// The runtime's choice of schedule for its next instances.
#[derive(Clone, Copy)]
pub struct Schedules {
    select_fn: unsafe extern "C" fn(*const std::ffi::c_char) -> i32,
    steps_fn: unsafe extern "C" fn() -> u64,
    /// Tasks queued and run by the last instance (absent from older builds).
    tasks_fn: Option<unsafe extern "C" fn(*mut u64) -> u64>,
}

impl Schedules {
    /// Selects `spec` (`random:SEED`, `pct:SEED:DEPTH:STEPS`) for the
    /// instances started from now on; false if the runtime rejects it.
    pub fn select(&self, spec: &str) -> bool {
        let Ok(c) = CString::new(spec) else { return false };
        // SAFETY: a NUL-terminated string, as the ABI takes it.
        unsafe { (self.select_fn)(c.as_ptr()) == 0 }
    }

    /// Scheduling steps of the current deterministic instance, or of the
    /// last one destroyed.
    pub fn steps(&self) -> u64 {
        // SAFETY: no arguments; safe from any thread per the ABI.
        unsafe { (self.steps_fn)() }
    }

    /// Tasks queued and tasks run by the last deterministic instance
    /// destroyed, if the runtime counts them.
    pub fn task_counts(&self) -> Option<(u64, u64)> {
        let tasks = self.tasks_fn?;
        let mut run = 0u64;
        // SAFETY: a valid out pointer, as the ABI takes it.
        let queued = unsafe { tasks(&mut run) };
        Some((queued, run))
    }
}

impl Introspection {
    pub fn stats(&self) -> Stats {
        let mut s = Stats::default();
        // SAFETY: the ABI says the function fills *out, never creates the
        // runtime, and is safe from any thread.
        unsafe { (self.stats_fn)(&mut s) };
        s
    }
    pub fn wait_idle(&self, timeout_ms: u64) -> bool {
        // SAFETY: same contract; blocks at most timeout_ms.
        unsafe { (self.wait_idle_fn)(timeout_ms) }
    }
    pub fn schedules(&self) -> Option<Schedules> {
        self.schedules
    }
}

/// The C++ `llvm::StringMap<void *>` that `__mlir_execution_engine_init`
/// fills (LLVM 19 layout: `StringMapImpl` with an empty `MallocAllocator`).
/// The C++ runtime inserts its symbols with inlined `try_emplace`, which calls
/// `StringMapImpl::LookupBucketFor`/`RehashTable` and `llvm::allocate_buffer`
/// from libLLVM: a default-constructed map (null table, zero counts,
/// `ItemSize` = sizeof(`StringMapEntry<void *>`) = 16) is exactly what it
/// expects, and we read the entries back afterwards. The map and its entries
/// are never freed (one small allocation per library for the process's life).
#[repr(C)]
struct StringMapRaw {
    table: *mut *mut u8,
    num_buckets: u32,
    num_items: u32,
    num_tombstones: u32,
    item_size: u32,
    /// Slack in case a hook's idea of the map is larger than ours.
    _spare: [u64; 8],
}

/// A bucket that held an entry that was removed: `-1 << 3` (the entry
/// pointer's low bits free through alignment).
const TOMBSTONE: usize = usize::MAX << 3;

impl StringMapRaw {
    fn new() -> Box<StringMapRaw> {
        Box::new(StringMapRaw {
            table: std::ptr::null_mut(),
            num_buckets: 0,
            num_items: 0,
            num_tombstones: 0,
            item_size: 16,
            _spare: [0; 8],
        })
    }

    /// The (name, address) entries. Entry layout: `size_t keyLength`,
    /// `void *value`, then the key bytes.
    unsafe fn entries(&self) -> HashMap<String, usize> {
        let mut out = HashMap::new();
        if self.table.is_null() {
            return out;
        }
        for i in 0..self.num_buckets as usize {
            let e = *self.table.add(i);
            if e.is_null() || e as usize == TOMBSTONE {
                continue;
            }
            let len = *(e as *const usize);
            let value = *(e.add(8) as *const usize);
            let key = std::slice::from_raw_parts(e.add(16), len);
            out.insert(String::from_utf8_lossy(key).into_owned(), value);
        }
        out
    }
}

struct Library {
    path: PathBuf,
    lib: RawLibrary,
    /// Symbols the library's init hook registered.
    registered: HashMap<String, usize>,
    destroy: Option<unsafe extern "C" fn()>,
}

impl Library {
    fn sym(&self, name: &str) -> Option<usize> {
        if let Some(&a) = self.registered.get(name) {
            return Some(a);
        }
        // SAFETY: we only take the address; nothing is called through it.
        unsafe { self.lib.get::<*mut c_void>(name.as_bytes()).ok().map(|s| *s as usize).filter(|&a| a != 0) }
    }
}

/// The runtime and the other libraries, loaded and initialized: their
/// destroy hooks run once, when this value is dropped (which must come
/// before the JIT's code is freed: the runtime's destroy waits for its
/// tasks; see `load::Program`).
pub struct Libraries {
    /// Never unloaded: JIT code and runtime threads may point into them,
    /// and unloading a Rust cdylib with live threads crashes.
    libs: ManuallyDrop<Vec<Library>>,
    pub introspection: Option<Introspection>,
}

/// Where the runtime is when --runtime is not given: next to the harness
/// (target/release), or in ../lib for an installed harness.
pub fn default_runtime() -> Result<PathBuf> {
    beside_harness(
        &["libmlir_async_runtime.so", "../lib/libmlir_async_runtime.so"],
        "async runtime",
        "build it with `cargo build --release -p mlir_async_runtime`, or pass --runtime PATH",
    )
}

/// The first of `relative` (paths from the harness executable's directory)
/// that is a file; else a usage error naming the first one, `what` it is
/// and the `hint`.
pub fn beside_harness(relative: &[&str], what: &str, hint: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe().map_err(|e| Error::usage(format!("cannot find the harness executable: {e}")))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let candidates: Vec<PathBuf> = relative.iter().map(|r| dir.join(r)).collect();
    match candidates.iter().find(|c| c.is_file()) {
        Some(found) => Ok(found.clone()),
        None => Err(Error::usage(format!("no {what} at {} ({hint})", candidates[0].display()))),
    }
}

/// Loads the library at `path`. A path argument is a path: a relative one
/// (even a bare `librt.so`) is taken from the current directory, never
/// looked up by the dynamic loader's library search.
fn open(path: &Path, what: &str) -> Result<RawLibrary> {
    let absolute = std::path::absolute(path)
        .map_err(|e| Error::usage(format!("{what} {}: {}", path.display(), crate::input::io_reason(&e))))?;
    if !absolute.exists() {
        return Err(Error::usage(format!("{what} {}: no such file", path.display())));
    }
    if absolute.is_dir() {
        return Err(Error::usage(format!("{what} {}: is a directory", path.display())));
    }
    // SAFETY: loading a library runs its constructors; that is what the
    // user asked for.
    unsafe { RawLibrary::open(Some(&absolute), RTLD_NOW | RTLD_GLOBAL) }.map_err(|e| {
        let msg = e.to_string();
        let msg = msg.strip_prefix("dlopen failed: ").unwrap_or(&msg).to_string();
        Error::usage(format!("cannot load {what} {}: {msg}", path.display()))
    })
}

impl Libraries {
    /// Loads the runtime then the others, checks the runtime's symbols and
    /// calls each library's init hook.
    pub fn load(runtime: &Path, shared: &[PathBuf]) -> Result<Libraries> {
        let rt = open(runtime, "runtime library")?;
        let missing: Vec<&str> = RUNTIME_SYMBOLS
            .iter()
            .copied()
            // SAFETY: address lookup only.
            .filter(|n| unsafe { rt.get::<*mut c_void>(n.as_bytes()) }.is_err())
            .collect();
        if !missing.is_empty() {
            let more = if missing.len() > 1 { format!(" and {} more", missing.len() - 1) } else { String::new() };
            return Err(Error::usage(format!(
                "{} is not an async runtime: it does not export {}{more}",
                runtime.display(),
                missing[0]
            )));
        }
        // SAFETY: the signatures are those of docs/introspection-abi.md.
        let introspection = unsafe {
            match (
                rt.get::<unsafe extern "C" fn(*mut Stats)>(b"rust_mlir_async_runtime_stats"),
                rt.get::<unsafe extern "C" fn(u64) -> bool>(b"rust_mlir_async_runtime_wait_idle"),
            ) {
                (Ok(s), Ok(w)) => {
                    let schedules = match (
                        rt.get::<unsafe extern "C" fn(*const std::ffi::c_char) -> i32>(b"rust_mlir_async_runtime_select_schedule"),
                        rt.get::<unsafe extern "C" fn() -> u64>(b"rust_mlir_async_runtime_schedule_steps"),
                    ) {
                        (Ok(select), Ok(steps)) => Some(Schedules {
                            select_fn: *select,
                            steps_fn: *steps,
                            tasks_fn: rt
                                .get::<unsafe extern "C" fn(*mut u64) -> u64>(b"rust_mlir_async_runtime_schedule_tasks")
                                .ok()
                                .map(|f| *f),
                        }),
                        _ => None,
                    };
                    Some(Introspection { stats_fn: *s, wait_idle_fn: *w, schedules })
                }
                _ => None,
            }
        };
        let mut libs = vec![(runtime.to_path_buf(), rt)];
        for p in shared {
            libs.push((p.clone(), open(p, "shared library")?));
        }
        let mut loaded = Vec::new();
        for (path, lib) in libs {
            let mut l = Library { path, lib, registered: HashMap::new(), destroy: None };
            l.init();
            loaded.push(l);
        }
        Ok(Libraries { libs: ManuallyDrop::new(loaded), introspection })
    }

    /// Resolves every name, or names the ones that no library and not the
    /// process defines.
    pub fn resolve(&self, names: &[String]) -> Result<Vec<(String, usize)>> {
        let mut out = Vec::with_capacity(names.len());
        let mut missing = Vec::new();
        for n in names {
            match self.lookup(n) {
                Some(a) => out.push((n.clone(), a)),
                None => missing.push(n.as_str()),
            }
        }
        if !missing.is_empty() {
            let libs: Vec<String> = self.libs.iter().map(|l| l.path.display().to_string()).collect();
            let more = if missing.len() > 1 { format!(" (and {} more: {})", missing.len() - 1, missing[1..].join(", ")) } else { String::new() };
            return Err(Error::usage(format!(
                "unresolved symbol `{}`{more}: not in {} nor the process (add --shared-lib?)",
                missing[0],
                libs.join(", ")
            )));
        }
        Ok(out)
    }

    pub fn lookup(&self, name: &str) -> Option<usize> {
        for l in self.libs.iter() {
            if let Some(a) = l.sym(name) {
                return Some(a);
            }
        }
        let c = CString::new(name).ok()?;
        // SAFETY: dlsym with RTLD_DEFAULT only looks a name up.
        let a = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c.as_ptr()) } as usize;
        (a != 0).then_some(a)
    }

    /// Calls the runtime's destroy hook (only the runtime's; the libraries
    /// stay usable): the next call into the runtime starts a fresh
    /// instance. Must not run while a run is in progress.
    pub fn destroy_runtime_instance(&self) {
        if let Some(d) = self.libs.first().and_then(|l| l.destroy) {
            // SAFETY: hook with signature `void()`; our runtime's may be
            // called any number of times, each ending the current instance.
            unsafe { d() };
        }
    }

}

impl Drop for Libraries {
    /// Calls the destroy hooks, last loaded first: once, as the value is
    /// dropped once. The libraries stay loaded (see `libs`).
    fn drop(&mut self) {
        for l in self.libs.iter().rev() {
            if let Some(d) = l.destroy {
                // SAFETY: hook with signature `void()`, called once after init.
                unsafe { d() };
            }
        }
    }
}

impl Library {
    /// Calls `__mlir_execution_engine_init` (MLIR 17+) or, failing that,
    /// `__mlir_runner_init` (MLIR 14-16) with a real, empty StringMap, and
    /// remembers the matching destroy hook.
    fn init(&mut self) {
        type Init = unsafe extern "C" fn(*mut StringMapRaw);
        type Destroy = unsafe extern "C" fn();
        for (init, destroy) in
            [("__mlir_execution_engine_init", "__mlir_execution_engine_destroy"), ("__mlir_runner_init", "__mlir_runner_destroy")]
        {
            // SAFETY: the hooks have these signatures in every MLIR version
            // that defines them (a reference is a pointer in the ABI).
            let (Ok(i), Ok(d)) = (unsafe { self.lib.get::<Init>(init.as_bytes()) }, unsafe { self.lib.get::<Destroy>(destroy.as_bytes()) }) else {
                continue;
            };
            let (i, d) = (*i, *d);
            let map = Box::leak(StringMapRaw::new());
            // SAFETY: `map` is a valid, default-constructed StringMap<void*>.
            unsafe { i(map) };
            // SAFETY: the hook filled it with entries of the documented layout.
            self.registered = unsafe { map.entries() };
            self.destroy = Some(d);
            return;
        }
    }
}
