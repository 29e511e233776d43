//! Filling the runners' symbol map: the `llvm::StringMap<void *>` that MLIR's
//! execution engine (MLIR 17 and later, `__mlir_execution_engine_init`) and
//! `mlir-cpu-runner` (MLIR 14-16, `__mlir_runner_init`) hand to a library's
//! init hook. What the hook puts there binds the compiled code's calls to
//! this library explicitly, as the C++ runtime does; left empty, the names
//! resolve through the process-wide lookup, where whichever library with
//! those names was loaded first wins (an engine given our library after an
//! engine that had used the C++ one called the C++ one).
//!
//! The map is a C++ object of the caller's LLVM. Its layout is the same in
//! LLVM 14, 15, 16, 19 and 22 (checked in each version's
//! `llvm/ADT/StringMap.h` and `StringMapEntry.h`; `docs/symbol-binding.md`):
//!
//! ```text
//! StringMapImpl:  StringMapEntryBase **TheTable; unsigned NumBuckets,
//!                 NumItems, NumTombstones, ItemSize;   (+ empty MallocAllocator)
//! TheTable:       NumBuckets + 1 entry pointers (null: empty, -1 << 3:
//!                 tombstone), then NumBuckets 32-bit full hashes
//! entry:          size_t keyLength; void *value; key bytes; '\0'
//!                 allocated with llvm::allocate_buffer(16 + len + 1, 8),
//!                 freed by the map's destructor with deallocate_buffer
//! ```
//!
//! What differs is the hashing and probing, which stay LLVM's own: this
//! module calls the caller's LLVM for them, as the C++ runtime's inlined
//! `try_emplace` does: `StringMapImpl::LookupBucketFor(StringRef)` (LLVM 14
//! to 16; the hash is computed inside) or `LookupBucketFor(StringRef,
//! uint32_t)` with `StringMapImpl::hash(StringRef)` (LLVM 19 and later),
//! then `RehashTable(unsigned)`, and `llvm::allocate_buffer` for the entry.
//! They are found with `dlsym` in the scope of the library that called the
//! hook (libMLIR, or the runner, and their libLLVM), else anywhere in the
//! process. A process whose LLVM is linked statically and not exported (a
//! melior program) has none of them: the map is then left empty, with one
//! warning, and such a program should register [`crate::api::embed::symbols`]
//! itself. After filling, every name is looked up again through LLVM's
//! `FindKey` to check that the map finds it.

use std::ffi::{c_int, c_void, CStr};
use std::ptr;

use crate::sync::misuse::warn;
use crate::sync::process::{AtomicBool, Ordering};

/// `llvm::StringMapImpl`, the part of `StringMap<void *>` we touch.
#[repr(C)]
struct StringMapImpl {
    table: *mut *mut Entry,
    num_buckets: u32,
    num_items: u32,
    num_tombstones: u32,
    item_size: u32,
}

/// `llvm::StringMapEntry<void *>`; the key follows it.
#[repr(C)]
struct Entry {
    key_length: usize,
    value: *const (),
}

/// `sizeof` and `alignof(StringMapEntry<void *>)`: the map's `ItemSize`
/// and the entry allocation's alignment.
const ENTRY_SIZE: usize = std::mem::size_of::<Entry>();
const ENTRY_ALIGN: usize = std::mem::align_of::<Entry>();
/// `StringMapImpl::getTombstoneVal()`: `-1 << 3` (an entry pointer's low
/// bits free through its 8-byte alignment).
const TOMBSTONE: usize = usize::MAX << 3;

type LookupKeyFn = unsafe extern "C" fn(*mut StringMapImpl, *const u8, usize) -> u32;
type LookupHashFn = unsafe extern "C" fn(*mut StringMapImpl, *const u8, usize, u32) -> u32;
type FindKeyFn = unsafe extern "C" fn(*const StringMapImpl, *const u8, usize) -> c_int;
type FindHashFn = unsafe extern "C" fn(*const StringMapImpl, *const u8, usize, u32) -> c_int;
type HashFn = unsafe extern "C" fn(*const u8, usize) -> u32;
type RehashFn = unsafe extern "C" fn(*mut StringMapImpl, u32) -> u32;
type AllocateFn = unsafe extern "C" fn(usize, usize) -> *mut c_void;

/// How a version of LLVM finds a key's bucket. A `StringRef` argument is
/// passed as its pointer and length (two integer registers).
#[derive(Clone, Copy)]
enum Probing {
    /// LLVM 14-16 (and 17-18): the functions hash the key themselves.
    KeyOnly { lookup: LookupKeyFn, find: FindKeyFn },
    /// LLVM 19 and later: the caller passes `StringMapImpl::hash(key)`.
    WithHash { lookup: LookupHashFn, find: FindHashFn, hash: HashFn },
}

/// The caller's LLVM functions that a `StringMap` insertion needs.
#[derive(Clone, Copy)]
pub(super) struct LlvmStringMap {
    probing: Probing,
    rehash: RehashFn,
    allocate: AllocateFn,
}

const LOOKUP_KEY: &CStr = c"_ZN4llvm13StringMapImpl15LookupBucketForENS_9StringRefE";
const LOOKUP_HASH: &CStr = c"_ZN4llvm13StringMapImpl15LookupBucketForENS_9StringRefEj";
const FIND_KEY: &CStr = c"_ZNK4llvm13StringMapImpl7FindKeyENS_9StringRefE";
const FIND_HASH: &CStr = c"_ZNK4llvm13StringMapImpl7FindKeyENS_9StringRefEj";
const HASH: &CStr = c"_ZN4llvm13StringMapImpl4hashENS_9StringRefE";
const REHASH: &CStr = c"_ZN4llvm13StringMapImpl11RehashTableEj";
const ALLOCATE: &CStr = c"_ZN4llvm15allocate_bufferEmm";

impl LlvmStringMap {
    /// The functions as exported by the library `handle` (and its
    /// dependencies), or `None` if one is missing.
    ///
    /// # Safety
    /// `handle` is a `dlopen` handle or `RTLD_DEFAULT`.
    pub(super) unsafe fn from_handle(handle: *mut c_void) -> Option<LlvmStringMap> {
        let sym = |name: &CStr| {
            // SAFETY: `dlsym` with a valid handle and NUL-terminated names.
            let address = unsafe { libc::dlsym(handle, name.as_ptr()) };
            (!address.is_null()).then_some(address)
        };
        // The transmutes: each symbol is the LLVM function of that mangled
        // name, whose Itanium-ABI signature is the type given (`this`, then
        // a `StringRef` as pointer and length).
        let probing = match (sym(LOOKUP_HASH), sym(FIND_HASH), sym(HASH)) {
            // SAFETY: the transmutes, above.
            (Some(lookup), Some(find), Some(hash)) => unsafe {
                Probing::WithHash {
                    lookup: std::mem::transmute::<*mut c_void, LookupHashFn>(lookup),
                    find: std::mem::transmute::<*mut c_void, FindHashFn>(find),
                    hash: std::mem::transmute::<*mut c_void, HashFn>(hash),
                }
            },
            // SAFETY: the transmutes, above.
            _ => unsafe {
                Probing::KeyOnly {
                    lookup: std::mem::transmute::<*mut c_void, LookupKeyFn>(sym(LOOKUP_KEY)?),
                    find: std::mem::transmute::<*mut c_void, FindKeyFn>(sym(FIND_KEY)?),
                }
            },
        };
        // SAFETY: as above.
        unsafe {
            Some(LlvmStringMap {
                probing,
                rehash: std::mem::transmute::<*mut c_void, RehashFn>(sym(REHASH)?),
                allocate: std::mem::transmute::<*mut c_void, AllocateFn>(sym(ALLOCATE)?),
            })
        }
    }

    /// The functions of the LLVM that the code calling us uses: in the
    /// scope of the library that called the hook, else in the process.
    fn of_caller(caller: *const c_void) -> Option<LlvmStringMap> {
        if let Some(handle) = caller_library(caller) {
            // SAFETY: a handle from `dlopen`, closed once.
            let found = unsafe { LlvmStringMap::from_handle(handle) };
            // SAFETY: as above (RTLD_NOLOAD only took a reference).
            unsafe { libc::dlclose(handle) };
            if found.is_some() {
                return found;
            }
        }
        // SAFETY: RTLD_DEFAULT is a valid pseudo-handle.
        unsafe { LlvmStringMap::from_handle(libc::RTLD_DEFAULT) }
    }

    /// True for LLVM 19 and later (the lookup takes the hash).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn takes_hash(&self) -> bool {
        matches!(self.probing, Probing::WithHash { .. })
    }

    /// # Safety
    /// `map` is a live `StringMap<void *>` of this LLVM.
    unsafe fn lookup_bucket(&self, map: *mut StringMapImpl, key: &str) -> usize {
        // SAFETY: per the contract; the key outlives the call.
        (unsafe {
            match self.probing {
                Probing::KeyOnly { lookup, .. } => lookup(map, key.as_ptr(), key.len()),
                Probing::WithHash { lookup, hash, .. } => lookup(map, key.as_ptr(), key.len(), hash(key.as_ptr(), key.len())),
            }
        }) as usize
    }

    /// The bucket holding `key`, if any (`StringMapImpl::FindKey`).
    ///
    /// # Safety
    /// As `lookup_bucket`.
    unsafe fn find(&self, map: *const StringMapImpl, key: &str) -> Option<usize> {
        // SAFETY: per the contract.
        let bucket = unsafe {
            match self.probing {
                Probing::KeyOnly { find, .. } => find(map, key.as_ptr(), key.len()),
                Probing::WithHash { find, hash, .. } => find(map, key.as_ptr(), key.len(), hash(key.as_ptr(), key.len())),
            }
        };
        usize::try_from(bucket).ok()
    }

    /// `map[key] = value`, as the C++ runtime's `exportSymbols[name] = ptr`:
    /// `try_emplace` (a new entry allocated as `StringMapEntry::create`
    /// does), then the value assigned, over an existing one too.
    ///
    /// # Safety
    /// `map` is a live `StringMap<void *>` of this LLVM, not used by another
    /// thread meanwhile.
    pub(super) unsafe fn insert_or_assign(&self, map: *mut c_void, key: &str, value: *const ()) {
        let map = map.cast::<StringMapImpl>();
        // SAFETY: per the contract.
        unsafe {
            let bucket_no = self.lookup_bucket(map, key);
            let bucket = (*map).table.add(bucket_no);
            let existing = *bucket;
            if !existing.is_null() && existing as usize != TOMBSTONE {
                (*existing).value = value;
                return;
            }
            if existing as usize == TOMBSTONE {
                (*map).num_tombstones -= 1;
            }
            let entry = (self.allocate)(ENTRY_SIZE + key.len() + 1, ENTRY_ALIGN).cast::<Entry>();
            entry.write(Entry { key_length: key.len(), value });
            let text = entry.cast::<u8>().add(ENTRY_SIZE);
            ptr::copy_nonoverlapping(key.as_ptr(), text, key.len());
            text.add(key.len()).write(0);
            *bucket = entry;
            (*map).num_items += 1;
            (self.rehash)(map, bucket_no as u32);
        }
    }

    /// The value the map holds for `key`, found through LLVM's `FindKey`.
    ///
    /// # Safety
    /// As `insert_or_assign`.
    pub(crate) unsafe fn get(&self, map: *const c_void, key: &str) -> Option<*const ()> {
        let map = map.cast::<StringMapImpl>();
        // SAFETY: per the contract; FindKey returns a bucket of the table.
        unsafe {
            let bucket = self.find(map, key)?;
            let entry = *(*map).table.add(bucket);
            Some((*entry).value)
        }
    }
}

/// Why the map was left as it was.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum NotFilled {
    /// The map does not look like a `StringMap<void *>`.
    NotAStringMap,
    /// LLVM's functions are not visible in this process.
    NoLlvm,
    /// A name was not found again after insertion.
    NotFound(&'static str),
}

/// Checks the fields of a map we are about to change: an empty or a
/// well-formed `StringMap<void *>`.
///
/// # Safety
/// `map` is null or points to readable memory of a `StringMapImpl`'s size.
unsafe fn plausible(map: *const StringMapImpl) -> bool {
    if map.is_null() {
        return false;
    }
    // SAFETY: per the contract.
    let m = unsafe { &*map };
    m.item_size as usize == ENTRY_SIZE
        && (m.table.is_null() == (m.num_buckets == 0))
        && (m.num_buckets == 0 || m.num_buckets.is_power_of_two())
        && m.num_items.saturating_add(m.num_tombstones) <= m.num_buckets
}

/// Puts every `(name, address)` into `map` with `llvm`'s functions, then
/// checks that each name is found again with that address.
///
/// # Safety
/// `map` is a live `StringMap<void *>` of the LLVM `llvm` came from, used
/// by no other thread meanwhile.
pub(super) unsafe fn fill_with(
    llvm: &LlvmStringMap,
    map: *mut c_void,
    symbols: &[(&'static str, *const ())],
) -> Result<(), NotFilled> {
    // SAFETY: per the contract.
    if !unsafe { plausible(map.cast()) } {
        return Err(NotFilled::NotAStringMap);
    }
    for &(name, address) in symbols {
        // SAFETY: per the contract.
        unsafe { llvm.insert_or_assign(map, name, address) };
    }
    for &(name, address) in symbols {
        // SAFETY: per the contract.
        if unsafe { llvm.get(map, name) } != Some(address) {
            return Err(NotFilled::NotFound(name));
        }
    }
    Ok(())
}

/// What the init hooks do: fills the map they are given with `symbols`,
/// using the caller's LLVM; on failure, leaves it (the names then resolve
/// by name in the process) and says so once per process.
///
/// # Safety
/// `map` is the `llvm::StringMap<void *>&` a runner passes to the hook.
pub(super) unsafe fn export(map: *mut c_void, symbols: &[(&'static str, *const ())], hook: &str, caller: *const c_void) {
    let result = match LlvmStringMap::of_caller(caller) {
        // SAFETY: forwarded contract.
        Some(llvm) => unsafe { fill_with(&llvm, map, symbols) },
        None => Err(NotFilled::NoLlvm),
    };
    static WARNED: AtomicBool = AtomicBool::new(false);
    let Err(why) = result else { return };
    // Relaxed: a once-only warning; a second one would be harmless.
    if WARNED.swap(true, Ordering::Relaxed) {
        return;
    }
    let why = match why {
        NotFilled::NotAStringMap => "it does not look like an llvm::StringMap<void *>".to_string(),
        NotFilled::NoLlvm => "LLVM's StringMap functions are not visible in this process (LLVM linked statically?)"
            .to_string(),
        NotFilled::NotFound(name) => format!("{name} was not found in it after insertion"),
    };
    warn(&format!(
        "{hook}: the engine's symbol map was not filled: {why}; the runtime's functions resolve by name \
         (a Rust program can register mlir_async_runtime::symbols() instead)"
    ));
}

extern "C" {
    /// glibc's `backtrace(3)`.
    fn backtrace(buffer: *mut *mut c_void, size: c_int) -> c_int;
}

/// A `dlopen` handle (RTLD_NOLOAD) of the library that called the init
/// hook: the one containing `caller` (the hook's return address), or, when
/// that is unknown (null), the first library on the call stack that is not
/// this one.
///
/// Objects are found from their program headers (`dl_iterate_phdr`), not
/// with `dladdr`, which scans the whole dynamic symbol table of the object:
/// for a runner that links MLIR statically, hundreds of KiB of it would
/// become resident for nothing.
fn caller_library(caller: *const c_void) -> Option<*mut c_void> {
    let ours = module_of(caller_library as *const c_void)?;
    let module = if caller.is_null() {
        let mut frames = [ptr::null_mut::<c_void>(); 16];
        // SAFETY: the buffer holds `frames.len()` pointers.
        let depth = unsafe { backtrace(frames.as_mut_ptr(), frames.len() as c_int) };
        frames
            .iter()
            .take(usize::try_from(depth).ok()?)
            .filter_map(|&frame| module_of(frame))
            .find(|module| module.base != ours.base)?
    } else {
        module_of(caller).filter(|module| module.base != ours.base)?
    };
    // SAFETY: a NUL-terminated name (or null for the main program, whose
    // handle is the global scope); RTLD_NOLOAD only takes a reference to an
    // object already loaded.
    let handle = unsafe { libc::dlopen(module.name_or_null(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
    (!handle.is_null()).then_some(handle)
}

/// A loaded object: its load bias and its path (empty for the main
/// program).
struct Module {
    base: usize,
    name: std::ffi::CString,
}

impl Module {
    fn name_or_null(&self) -> *const libc::c_char {
        if self.name.as_bytes().is_empty() {
            ptr::null()
        } else {
            self.name.as_ptr()
        }
    }
}

/// The loaded object whose segments contain `address`.
fn module_of(address: *const c_void) -> Option<Module> {
    struct Search {
        address: usize,
        found: Option<Module>,
    }
    unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: libc::size_t, data: *mut c_void) -> c_int {
        // SAFETY: `dl_iterate_phdr` passes valid info; `data` is our `Search`.
        let (info, search) = unsafe { (&*info, &mut *data.cast::<Search>()) };
        let base = info.dlpi_addr as usize;
        for i in 0..usize::from(info.dlpi_phnum) {
            // SAFETY: `dlpi_phdr` holds `dlpi_phnum` headers.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            let start = base + ph.p_vaddr as usize;
            if ph.p_type == libc::PT_LOAD && (start..start + ph.p_memsz as usize).contains(&search.address) {
                let name = if info.dlpi_name.is_null() {
                    std::ffi::CString::default()
                } else {
                    // SAFETY: `dlpi_name` is a NUL-terminated string (maybe
                    // empty).
                    unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) }.to_owned()
                };
                search.found = Some(Module { base, name });
                return 1;
            }
        }
        0
    }
    let mut search = Search { address: address as usize, found: None };
    // SAFETY: the callback only reads what it is given and writes `search`.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&mut search as *mut Search).cast()) };
    search.found
}

/// The insertion against each LLVM's own `StringMap` functions: a map
/// filled from empty, one that grows through several rehashes, a key
/// already present (overwritten, as `map[key] = value`), and a bucket left
/// as a tombstone; every key is then found by LLVM's `FindKey`, and the
/// map is destroyed as `~StringMap` does (entries through
/// `deallocate_buffer`). LLVM 19 is always there (scripts/toolchain/setup.sh); the
/// other versions are tested when `make compat` has unpacked them.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::path::PathBuf;

    type DeallocateFn = unsafe extern "C" fn(*mut c_void, usize, usize);
    type RemoveKeyFn = unsafe extern "C" fn(*mut StringMapImpl, *mut Entry);

    struct Llvm {
        handle: *mut c_void,
        map: LlvmStringMap,
    }

    impl Llvm {
        fn open(path: &std::path::Path) -> Llvm {
            let name = CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: loading a library runs its constructors; RTLD_LOCAL
            // keeps each LLVM's symbols to itself.
            let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            assert!(!handle.is_null(), "cannot load {}", path.display());
            // SAFETY: a handle from dlopen.
            let map = unsafe { LlvmStringMap::from_handle(handle) }.expect("LLVM's StringMap functions");
            Llvm { handle, map }
        }

        fn sym(&self, name: &CStr) -> *mut c_void {
            // SAFETY: a valid handle and name.
            let address = unsafe { libc::dlsym(self.handle, name.as_ptr()) };
            assert!(!address.is_null(), "{name:?} missing");
            address
        }

        /// `~StringMap<void *>`.
        unsafe fn destroy(&self, map: &mut StringMapImpl) {
            // SAFETY: the function of that name.
            let deallocate: DeallocateFn = unsafe { std::mem::transmute(self.sym(c"_ZN4llvm17deallocate_bufferEPvmm")) };
            for i in 0..map.num_buckets as usize {
                // SAFETY: the table has `num_buckets` buckets.
                let entry = unsafe { *map.table.add(i) };
                if !entry.is_null() && entry as usize != TOMBSTONE {
                    // SAFETY: an entry allocated as `StringMapEntry::create`.
                    unsafe { deallocate(entry.cast(), ENTRY_SIZE + (*entry).key_length + 1, ENTRY_ALIGN) };
                }
            }
            // SAFETY: the table is `safe_calloc`ed; `~StringMapImpl` frees it.
            unsafe { libc::free(map.table.cast()) };
        }
    }

    fn empty_map() -> StringMapImpl {
        StringMapImpl { table: ptr::null_mut(), num_buckets: 0, num_items: 0, num_tombstones: 0, item_size: ENTRY_SIZE as u32 }
    }

    fn libraries() -> Vec<(u32, PathBuf)> {
        let mut found = vec![(19, PathBuf::from("/usr/lib/llvm-19/lib/libLLVM.so.19.1"))];
        let compat = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/compat");
        for version in [14, 15, 16, 22] {
            let lib = compat.join(format!("{version}/root/usr/lib/x86_64-linux-gnu/libLLVM-{version}.so"));
            if lib.exists() {
                found.push((version, lib));
            }
        }
        found
    }

    fn check(version: u32, llvm: &Llvm) {
        assert_eq!(llvm.map.takes_hash(), version >= 19, "LLVM {version}'s LookupBucketFor signature");
        let names: Vec<String> = (0..300).map(|i| format!("key{i}")).collect();
        let mut map = empty_map();
        let raw = &mut map as *mut StringMapImpl as *mut c_void;
        // Others' entries first, as another library's init hook would
        // leave them: the map grows through several rehashes.
        let others: Vec<(&'static str, *const ())> =
            names.iter().map(|n| (&*n.clone().leak(), n.as_ptr().cast())).collect();
        // SAFETY: a live, empty StringMap<void *> of this LLVM.
        unsafe { fill_with(&llvm.map, raw, &others) }.unwrap();
        assert_eq!(map.num_items, 300);
        assert!(map.num_buckets >= 512, "LLVM {version}: {} buckets", map.num_buckets);
        // A tombstone where one of the names will go.
        // SAFETY: the function of that name; the entry is the map's.
        unsafe {
            let remove: RemoveKeyFn =
                std::mem::transmute(llvm.sym(c"_ZN4llvm13StringMapImpl9RemoveKeyEPNS_18StringMapEntryBaseE"));
            let bucket = llvm.map.find(&map, "key7").unwrap();
            let entry = *map.table.add(bucket);
            remove(&mut map, entry);
            let deallocate: DeallocateFn = std::mem::transmute(llvm.sym(c"_ZN4llvm17deallocate_bufferEPvmm"));
            deallocate(entry.cast(), ENTRY_SIZE + 4 + 1, ENTRY_ALIGN);
        }
        assert_eq!(map.num_items, 299);
        // Ours, one overwriting an existing key.
        let ours: Vec<(&'static str, *const ())> =
            vec![("key7", 7 as *const ()), ("key8", 8 as *const ()), ("mlirAsyncRuntimeAddRef", 1 as *const ())];
        // SAFETY: as above.
        unsafe { fill_with(&llvm.map, raw, &ours) }.unwrap();
        assert_eq!(map.num_items, 301);
        for (i, name) in names.iter().enumerate() {
            let want = match i {
                7 => 7 as *const (),
                8 => 8 as *const (),
                _ => name.as_ptr().cast(),
            };
            // SAFETY: as above.
            assert_eq!(unsafe { llvm.map.get(raw, name) }, Some(want), "LLVM {version}: {name}");
        }
        // SAFETY: as above.
        assert_eq!(unsafe { llvm.map.get(raw, "mlirAsyncRuntimeAddRef") }, Some(1 as *const ()));
        // SAFETY: as above.
        assert_eq!(unsafe { llvm.map.get(raw, "absent") }, None);
        // SAFETY: the map is ours; destroyed once.
        unsafe { llvm.destroy(&mut map) };
        // The names leaked for `fill_with`'s `'static` keys (the map copies
        // them into its entries): freed now that the map is gone, so that
        // LeakSanitizer (`make sanitize-asan`) has nothing to report.
        for (name, _) in others {
            // SAFETY: each is a `String`'s leaked buffer, of exactly this
            // length, freed once; nothing reads it any more.
            drop(unsafe { Box::from_raw(name as *const str as *mut str) });
        }
    }

    #[test]
    fn insertion_matches_each_llvm_string_map() {
        let mut tested = Vec::new();
        for (version, path) in libraries() {
            check(version, &Llvm::open(&path));
            tested.push(version);
        }
        eprintln!("StringMap insertion checked against LLVM {tested:?}");
    }

    #[test]
    fn a_map_that_is_not_a_string_map_is_left_alone() {
        let llvm = Llvm::open(&libraries()[0].1);
        let mut map = empty_map();
        map.item_size = 24;
        // SAFETY: a readable map-sized block; it is refused before use.
        let result = unsafe { fill_with(&llvm.map, &mut map as *mut StringMapImpl as *mut c_void, &[("x", 1 as *const ())]) };
        assert_eq!(result, Err(NotFilled::NotAStringMap));
        assert!(map.table.is_null());
    }
}
