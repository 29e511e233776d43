//! The MLIR lowering pipelines of the project, per MLIR version, read from
//! `mlir-tests/lib/pipelines.txt` (the one definition; its header documents
//! the `VERSION KEY VALUE` format and every key). This crate is the Rust
//! reader of that file, shared by `jit-harness` and `examples/melior-client`;
//! `mlir-tests/lib/pipelines.py` is the Python one, and the two agree
//! (`tests/agrees_with_pipelines_py.rs`).
//!
//! ```
//! let table = mlir_pipelines::Table::embedded().unwrap();
//! let v19 = table.version(19).unwrap();
//! assert!(v19.pipeline(false, None, None).starts_with("builtin.module(async-func-to-async-runtime,"));
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// The text of `mlir-tests/lib/pipelines.txt`, embedded at build time.
pub const TABLE_TEXT: &str = include_str!("../../mlir-tests/lib/pipelines.txt");

/// The MLIR version the corpus is written for, and the default when an
/// install prefix does not name its version (`.../llvm-N`).
pub const DEFAULT_VERSION: u32 = 19;

const SCALAR_KEYS: &[&str] = &[
    "runner",
    "anchor",
    "async-func",
    "to-runtime",
    "ref-counting",
    "policy-ref-counting",
    "openmp-to-llvm",
    "fixed-parallel-for",
    "toolchain",
];
const LIST_KEYS: &[&str] = &["to-llvm", "openmp"];
const REQUIRED_KEYS: &[&str] = &["runner", "to-runtime", "ref-counting", "policy-ref-counting", "to-llvm"];

/// The pass that a version's `fixed-parallel-for` replaces.
pub const PARALLEL_FOR: &str = "async-parallel-for";

/// The file name of the plugin of `make lowering-fixes`.
pub const PLUGIN_NAME: &str = "libmlir_async_lowering_fixes.so";

/// Where `make lowering-fixes` puts MLIR `number`'s plugin, relative to the
/// repository's `target/` (as `pipelines.py`'s `plugin_relpath`, which
/// gives it relative to the repository).
pub fn plugin_relpath(number: u32) -> String {
    if number == DEFAULT_VERSION {
        format!("lowering-fixes/{PLUGIN_NAME}")
    } else {
        format!("lowering-fixes/{number}/{PLUGIN_NAME}")
    }
}

/// `passes` with every pass named `old` (with or without options, at any
/// nesting) renamed `new`; names that merely contain `old` are kept (as
/// `pipelines.py`'s `rename_pass`).
pub fn rename_pass(passes: &str, old: &str, new: &str) -> String {
    let part_of_name = |c: char| c.is_alphanumeric() || c == '_' || c == '-' || c == '.';
    let mut out = String::with_capacity(passes.len());
    let mut rest = passes;
    let mut prev: Option<char> = None;
    while let Some(i) = rest.find(old) {
        let before = rest[..i].chars().next_back().or(prev);
        let after = rest[i + old.len()..].chars().next();
        out.push_str(&rest[..i]);
        if before.is_some_and(part_of_name) || after.is_some_and(part_of_name) {
            out.push_str(old);
        } else {
            out.push_str(new);
        }
        prev = old.chars().next_back();
        rest = &rest[i + old.len()..];
    }
    out.push_str(rest);
    out
}

/// A malformed table, or a version it does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// One MLIR version's row of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub number: u32,
    /// The JIT runner's name in `<prefix>/bin`.
    pub runner: String,
    /// The op a whole pipeline is nested in; `None`: a bare pass list.
    pub anchor: Option<String>,
    /// The async.func lowering; `None`: the version has none.
    pub async_func: Option<String>,
    pub to_runtime: String,
    pub ref_counting: String,
    pub policy_ref_counting: String,
    pub to_llvm: Vec<String>,
    /// The front passes that turn `scf.parallel` into OpenMP; empty: the
    /// version has no OpenMP lowering here.
    pub openmp: Vec<String>,
    /// The omp dialect to LLVM, run just before to-llvm's last pass.
    pub openmp_to_llvm: Option<String>,
    /// The name of async-parallel-for with our patches in the plugin of
    /// `make lowering-fixes`; `None`: no plugin for the version.
    pub fixed_parallel_for: Option<String>,
    /// Where `make setup` gets the version's tools: `pypi` (wheels) or
    /// `bindings` (Python bindings only: lowering, no runner); `None`:
    /// Debian's packages.
    pub toolchain: Option<String>,
}

impl Version {
    /// The pass list without anchor: `[async-func,] to-runtime,
    /// ref-counting (or the policy-based one), to-llvm`.
    pub fn passes(&self, policy: bool, async_func: bool) -> Result<String, Error> {
        let mut steps: Vec<&str> = Vec::new();
        if async_func {
            let pass = self
                .async_func
                .as_deref()
                .ok_or_else(|| Error(format!("MLIR {} has no async.func lowering", self.number)))?;
            steps.push(pass);
        }
        steps.push(&self.to_runtime);
        steps.push(if policy { &self.policy_ref_counting } else { &self.ref_counting });
        steps.extend(self.to_llvm.iter().map(String::as_str));
        Ok(steps.join(","))
    }

    /// `passes` nested in the version's anchor, if it has one.
    pub fn anchored(&self, passes: &str) -> String {
        match &self.anchor {
            Some(anchor) => format!("{anchor}({passes})"),
            None => passes.to_string(),
        }
    }

    /// The whole pipeline, anchored. `async_func: None` includes the
    /// async.func lowering where the version has one; `front` is a pass
    /// (with options) to run first, e.g. `async-parallel-for{...}`.
    pub fn pipeline(&self, policy: bool, async_func: Option<bool>, front: Option<&str>) -> String {
        let async_func = async_func.unwrap_or(self.async_func.is_some()) && self.async_func.is_some();
        let passes = self.passes(policy, async_func).expect("async.func only where the version has it");
        match front {
            Some(front) => self.anchored(&format!("{front},{passes}")),
            None => self.anchored(&passes),
        }
    }

    /// to-llvm alone: `scf.parallel` becomes nested sequential loops, the
    /// reference lowering of a parallel loop.
    pub fn sequential(&self) -> String {
        self.anchored(&self.to_llvm.join(","))
    }

    /// `scf.parallel` to OpenMP, then to-llvm with `openmp-to-llvm` before
    /// its last pass (as `pipelines.py --openmp`).
    pub fn openmp_pipeline(&self) -> Result<String, Error> {
        let (Some(to_llvm_omp), false) = (&self.openmp_to_llvm, self.openmp.is_empty()) else {
            return Err(Error(format!("MLIR {} has no openmp/openmp-to-llvm in pipelines.txt", self.number)));
        };
        let Some((last, rest)) = self.to_llvm.split_last().filter(|(l, _)| *l == "reconcile-unrealized-casts") else {
            return Err(Error(format!("MLIR {}: to-llvm must end with reconcile-unrealized-casts", self.number)));
        };
        let steps: Vec<&str> = self
            .openmp
            .iter()
            .chain(rest)
            .map(String::as_str)
            .chain([to_llvm_omp.as_str(), last.as_str()])
            .collect();
        Ok(self.anchored(&steps.join(",")))
    }

    /// `passes` with async-parallel-for renamed to the version's fixed pass
    /// (`--fixed-lowering`); an error when the version has none.
    pub fn fixed(&self, passes: &str) -> Result<String, Error> {
        let fixed = self.fixed_parallel_for.as_deref().ok_or_else(|| {
            Error(format!("MLIR {} has no fixed {PARALLEL_FOR} (no fixed-parallel-for in pipelines.txt)", self.number))
        })?;
        Ok(rename_pass(passes, PARALLEL_FOR, fixed))
    }

    /// The default pipeline for a program: everything, the automatic
    /// reference counting (what `pipelines.py` prints without options).
    pub fn default_pipeline(&self) -> String {
        self.pipeline(false, None, None)
    }
}

/// Every version of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    versions: BTreeMap<u32, Version>,
}

impl Table {
    /// Parses the table's text; `source` names it in errors.
    pub fn parse(text: &str, source: &str) -> Result<Table, Error> {
        let mut rows: BTreeMap<u32, BTreeMap<&str, Vec<&str>>> = BTreeMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut parts = line.splitn(3, char::is_whitespace);
            let (version, key, value) = match (parts.next(), parts.next(), parts.next().map(str::trim)) {
                (Some(v), Some(k), Some(value)) if !value.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
                    (v.parse::<u32>().map_err(|e| Error(format!("{source}:{}: {e}", n + 1)))?, k, value)
                }
                _ => return Err(Error(format!("{source}:{}: expected `VERSION KEY VALUE`: {line}", n + 1))),
            };
            let entries = rows.entry(version).or_default();
            if SCALAR_KEYS.contains(&key) {
                if entries.contains_key(key) {
                    return Err(Error(format!("{source}:{}: {key} given twice for MLIR {version}", n + 1)));
                }
            } else if !LIST_KEYS.contains(&key) {
                return Err(Error(format!("{source}:{}: unknown key {key}", n + 1)));
            }
            entries.entry(key).or_default().push(value);
        }
        let mut versions = BTreeMap::new();
        for (number, entries) in rows {
            let missing: Vec<&str> = REQUIRED_KEYS.iter().copied().filter(|k| !entries.contains_key(k)).collect();
            if !missing.is_empty() {
                return Err(Error(format!("{source}: MLIR {number} lacks {}", missing.join(", "))));
            }
            let one = |key: &str| entries.get(key).map(|v| v[0].to_string());
            let version = Version {
                number,
                runner: one("runner").unwrap_or_default(),
                anchor: one("anchor"),
                async_func: one("async-func"),
                to_runtime: one("to-runtime").unwrap_or_default(),
                ref_counting: one("ref-counting").unwrap_or_default(),
                policy_ref_counting: one("policy-ref-counting").unwrap_or_default(),
                to_llvm: entries.get("to-llvm").map(|v| v.iter().map(|p| p.to_string()).collect()).unwrap_or_default(),
                openmp: entries.get("openmp").map(|v| v.iter().map(|p| p.to_string()).collect()).unwrap_or_default(),
                openmp_to_llvm: one("openmp-to-llvm"),
                fixed_parallel_for: one("fixed-parallel-for"),
                toolchain: one("toolchain"),
            };
            versions.insert(number, version);
        }
        Ok(Table { versions })
    }

    /// The table embedded in this crate ([`TABLE_TEXT`]).
    pub fn embedded() -> Result<Table, Error> {
        Table::parse(TABLE_TEXT, "mlir-tests/lib/pipelines.txt")
    }

    /// The row of MLIR `number`.
    pub fn version(&self, number: u32) -> Result<&Version, Error> {
        self.versions.get(&number).ok_or_else(|| {
            let have: Vec<String> = self.versions.keys().map(u32::to_string).collect();
            Error(format!("no MLIR {number} in pipelines.txt (have {})", have.join(" ")))
        })
    }

    /// Every version, ascending.
    pub fn numbers(&self) -> impl Iterator<Item = u32> + '_ {
        self.versions.keys().copied()
    }
}

/// The MLIR version of an install prefix named like `.../llvm-N` (Debian's
/// layout), or of its `bin` directory; `None` when the name does not say.
pub fn version_of_prefix(path: &Path) -> Option<u32> {
    let prefix = if path.file_name().is_some_and(|n| n == "bin") { path.parent()? } else { path };
    prefix.file_name()?.to_str()?.strip_prefix("llvm-")?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_of_the_table_parses() {
        let table = Table::embedded().unwrap();
        assert_eq!(table.numbers().collect::<Vec<_>>(), vec![14, 15, 16, 19, 21, 22, 24]);
        assert_eq!(table.version(21).unwrap().toolchain.as_deref(), Some("pypi"));
        assert_eq!(table.version(24).unwrap().toolchain.as_deref(), Some("bindings"));
        assert_eq!(table.version(22).unwrap().toolchain, None);
        assert_eq!(table.version(22).unwrap().runner, "mlir-runner");
        assert_eq!(table.version(15).unwrap().anchor, None);
    }

    #[test]
    fn a_pipeline_is_anchored_with_async_func_first() {
        let table = Table::embedded().unwrap();
        let p = table.version(19).unwrap().default_pipeline();
        assert!(p.starts_with("builtin.module(async-func-to-async-runtime,async-to-async-runtime,"), "{p}");
        assert!(p.ends_with(",reconcile-unrealized-casts)"), "{p}");
        let p15 = table.version(15).unwrap().default_pipeline();
        assert!(p15.starts_with("async-to-async-runtime,func.func("), "{p15}");
    }

    #[test]
    fn a_front_pass_comes_first_inside_the_anchor() {
        let table = Table::embedded().unwrap();
        let p = table.version(19).unwrap().pipeline(false, Some(false), Some("async-parallel-for{num-workers=1}"));
        assert!(p.starts_with("builtin.module(async-parallel-for{num-workers=1},async-to-async-runtime,"), "{p}");
    }

    #[test]
    fn malformed_tables_say_where() {
        assert_eq!(Table::parse("19 runner", "t").unwrap_err().to_string(), "t:1: expected `VERSION KEY VALUE`: 19 runner");
        assert_eq!(Table::parse("# c\n19 colour red", "t").unwrap_err().to_string(), "t:2: unknown key colour");
        assert_eq!(
            Table::parse("19 runner a\n19 runner b", "t").unwrap_err().to_string(),
            "t:2: runner given twice for MLIR 19"
        );
        assert!(Table::parse("19 runner a", "t").unwrap_err().to_string().starts_with("t: MLIR 19 lacks to-runtime"));
        assert_eq!(Table::embedded().unwrap().version(13).unwrap_err().to_string(), "no MLIR 13 in pipelines.txt (have 14 15 16 19 21 22 24)");
    }

    #[test]
    fn the_fixed_lowering_renames_async_parallel_for_only() {
        let table = Table::embedded().unwrap();
        let v19 = table.version(19).unwrap();
        assert_eq!(
            v19.fixed("builtin.module(async-parallel-for{num-workers=1},func.func(async-parallel-for),x)").unwrap(),
            "builtin.module(async-parallel-for-fixed{num-workers=1},func.func(async-parallel-for-fixed),x)"
        );
        assert_eq!(v19.fixed("async-parallel-for-fixed,my.async-parallel-for,async-parallel-fork").unwrap(),
                   "async-parallel-for-fixed,my.async-parallel-for,async-parallel-fork");
        assert_eq!(rename_pass("async-parallel-for", "async-parallel-for", "y"), "y");
        assert!(table.version(16).unwrap().fixed("async-parallel-for").is_err());
        assert_eq!(plugin_relpath(19), "lowering-fixes/libmlir_async_lowering_fixes.so");
        assert_eq!(plugin_relpath(22), "lowering-fixes/22/libmlir_async_lowering_fixes.so");
    }

    #[test]
    fn the_version_of_a_prefix_comes_from_its_name() {
        assert_eq!(version_of_prefix(Path::new("/opt/x/llvm-22")), Some(22));
        assert_eq!(version_of_prefix(Path::new("/opt/x/llvm-16/bin")), Some(16));
        assert_eq!(version_of_prefix(Path::new("/opt/llvm")), None);
    }
}
