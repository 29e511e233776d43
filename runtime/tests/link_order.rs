//! Checks on how the shared library is linked: the properties that keep it
//! safe to unload and small in memory. Reads the built library with
//! binutils (`readelf`, `nm`).

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Command;

/// The cdylib built beside this test binary (`target/<profile>/`).
fn library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let lib = dir.join("libmlir_async_runtime.so");
    assert!(lib.exists(), "{} not built", lib.display());
    lib
}

fn tool_output(tool: &str, args: &[&str]) -> String {
    let out = Command::new(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {tool}: {e}"));
    assert!(out.status.success(), "{tool} {args:?} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn library_is_nodelete_so_unloading_cannot_pull_code_from_workers() {
    let lib = library();
    let dynamic = tool_output("readelf", &["-d", lib.to_str().unwrap()]);
    assert!(
        dynamic.lines().any(|l| l.contains("FLAGS_1") && l.contains("NODELETE")),
        "DT_FLAGS_1 lacks NODELETE:\n{dynamic}"
    );
}

#[test]
fn hot_functions_are_ordered_by_lld_and_the_list_is_current() {
    let lib = library();
    let comment = tool_output("readelf", &["-p", ".comment", lib.to_str().unwrap()]);
    assert!(
        comment.contains("LLD"),
        "not linked with lld, so the hot-code ordering is off (install lld-19: scripts/toolchain/setup.sh)"
    );
    let list = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("link/hot-symbols.txt"),
    )
    .unwrap();
    let wanted: Vec<&str> = list.lines().filter(|l| !l.is_empty()).collect();
    // Compared without ThinLTO's `.llvm.<hash>` suffix: the hash is that of
    // the module, debug info and its absolute paths included, so the same
    // commit built in another folder (a CI clone) names those functions
    // differently (35 of 311 in one check). lld orders them only where the
    // list was made; the test asks whether the functions still exist.
    let present: HashSet<String> = tool_output("nm", &[lib.to_str().unwrap()])
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(|name| without_llvm_suffix(name).to_owned()))
        .collect();
    let missing: Vec<&&str> = wanted.iter().filter(|s| !present.contains(without_llvm_suffix(s))).collect();
    // Some churn is harmless (a renamed helper lands in the default order);
    // past a tenth, the ordering no longer describes this library.
    assert!(
        missing.len() * 10 <= wanted.len(),
        "{} of {} hot symbols are gone from the library: run scripts/bench/hot_symbols.sh \
         (first missing: {:?})",
        missing.len(),
        wanted.len(),
        missing.iter().take(5).collect::<Vec<_>>()
    );
}

/// `name` without the `.llvm.<digits>` suffix that ThinLTO gives a
/// function it promotes out of its module.
fn without_llvm_suffix(name: &str) -> &str {
    match name.rfind(".llvm.") {
        Some(at) if name[at + 6..].bytes().all(|b| b.is_ascii_digit()) => &name[..at],
        _ => name,
    }
}
