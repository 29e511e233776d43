//! Helpers shared by the integration tests: the built harness, the two
//! runtimes, the test data.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The LLVM/MLIR install under test, `{LLVM}` in paths: $LLVM_PREFIX, else
/// the one the harness was built against (jit_harness::toolchain).
pub const LLVM: LlvmPrefix = LlvmPrefix;

pub struct LlvmPrefix;

impl std::fmt::Display for LlvmPrefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", jit_harness::toolchain::llvm_prefix().display())
    }
}

/// The default pipeline of the harness for the toolchain under test.
pub fn default_pipeline() -> String {
    jit_harness::pipeline::default_pipeline(&jit_harness::toolchain::llvm_prefix().join("bin")).unwrap()
}

pub fn harness() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_jit-harness"))
}

pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// Our runtime, as `make test` builds it before running the tests.
pub fn our_runtime() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/libmlir_async_runtime.so");
    assert!(p.is_file(), "{} is missing: run `cargo build --release --workspace` first", p.display());
    p
}

pub fn cxx_runtime() -> PathBuf {
    let p = jit_harness::toolchain::llvm_prefix().join("lib/libmlir_async_runtime.so");
    assert!(p.is_file(), "{} is missing (scripts/toolchain/setup.sh installs it)", p.display());
    p
}

pub fn c_runner_utils() -> String {
    format!("{LLVM}/lib/libmlir_c_runner_utils.so")
}

pub struct Run {
    /// The exit code, or -1 when a signal ended the process.
    pub code: i32,
    /// The signal that ended the process, if one did.
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

pub fn run_with_stdin(args: &[&str], stdin: Option<&[u8]>) -> Run {
    let mut cmd = Command::new(harness());
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = cmd.spawn().expect("cannot start jit-harness");
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input).unwrap();
    }
    let Output { status, stdout, stderr } = child.wait_with_output().unwrap();
    Run {
        code: status.code().unwrap_or(-1),
        signal: std::os::unix::process::ExitStatusExt::signal(&status),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

pub fn run(args: &[&str]) -> Run {
    run_with_stdin(args, None)
}

/// Runs the harness with `env` added to its environment.
#[allow(dead_code)]
pub fn run_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let out = Command::new(harness()).args(args).envs(env.iter().copied()).stdin(Stdio::null()).output().expect("cannot start jit-harness");
    Run {
        code: out.status.code().unwrap_or(-1),
        signal: std::os::unix::process::ExitStatusExt::signal(&out.status),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs the harness in directory `dir`.
pub fn run_in(dir: &Path, args: &[&str]) -> Run {
    let out = Command::new(harness()).args(args).current_dir(dir).stdin(Stdio::null()).output().expect("cannot start jit-harness");
    Run {
        code: out.status.code().unwrap_or(-1),
        signal: std::os::unix::process::ExitStatusExt::signal(&out.status),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The summary printed by --json.
pub fn summary(r: &Run) -> serde_json::Value {
    let line = r.stdout.lines().last().unwrap_or_else(|| panic!("no summary; stderr: {}", r.stderr));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("bad JSON {line:?}: {e}; stderr: {}", r.stderr))
}

/// Lowers tests/data/NAME.mlir to LLVM IR in a temp dir.
pub fn lower_to_ll(name: &str, dir: &Path) -> PathBuf {
    let out = dir.join(format!("{name}.ll"));
    lower_file(&data(&format!("{name}.mlir")), &out);
    out
}

/// Lowers `src` to LLVM IR `out` by the project's one recipe
/// (mlir-tests/lib/lowering.py: the toolchain's mlir-opt with its default
/// pipeline, then mlir-translate).
pub fn lower_file(src: &Path, out: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mlir-tests/lib/lowering.py");
    let r = Command::new("python3").arg(script).arg(src).arg("-o").arg(out).output().unwrap();
    assert!(r.status.success(), "lowering {} failed: {}", src.display(), String::from_utf8_lossy(&r.stderr));
}

pub fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("jit-harness-test-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The floor runtime (bench/floor), the reference runtime, as `make build`
/// builds it (make floor) before running the tests.
pub fn floor_runtime() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/floor/libmlir_async_floor.so");
    assert!(p.is_file(), "{} is missing: run `make floor` first", p.display());
    p
}

/// MLIR 19's pipeline with `front` (a pass with its options) first, as
/// mlir-tests/lib/pipelines.py prints it.
pub fn pipeline_with_front(front: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mlir-tests/lib/pipelines.py");
    let out = Command::new("python3").arg(script).args(["--no-async-func", "--front", front]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
