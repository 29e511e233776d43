//! Stage 2, lower: MLIR to LLVM IR text with MLIR 19's `mlir-opt` (the
//! async lowering pipeline) and `mlir-translate --mlir-to-llvmir`; the LLVM
//! pass pipeline itself runs in `jit.rs` on the parsed module.

use crate::error::{Error, Result};
use crate::input::{io_reason, Input};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// The project's lowering pipelines, defined once for every MLIR version
/// (the corpus, bench, stress and compat scripts read the same file; its
/// header documents the `VERSION KEY VALUE` format).
const PIPELINES: &str = include_str!("../../mlir-tests/lib/pipelines.txt");

/// The MLIR version of the default `--mlir-bin` (/usr/lib/llvm-19/bin).
const MLIR_VERSION: &str = "19";

/// The default `--pipeline` for MLIR input: MLIR 19's whole pipeline from
/// pipelines.txt, `anchor(async-func, to-runtime, ref-counting, to-llvm)`
/// (what `mlir-tests/lib/pipelines.py` prints).
pub fn default_pipeline() -> String {
    let values = |key: &str| -> Vec<&'static str> {
        PIPELINES
            .lines()
            .filter_map(|line| {
                let mut fields = line.split_whitespace();
                match (fields.next(), fields.next(), fields.next()) {
                    (Some(v), Some(k), Some(value)) if v == MLIR_VERSION && k == key => Some(value),
                    _ => None,
                }
            })
            .collect()
    };
    let passes = ["async-func", "to-runtime", "ref-counting", "to-llvm"]
        .iter()
        .flat_map(|key| values(key))
        .collect::<Vec<_>>()
        .join(",");
    match values("anchor").first() {
        Some(anchor) => format!("{anchor}({passes})"),
        None => passes,
    }
}

/// Runs `tool args` with `stdin` as input; returns its standard output, or
/// an error with the first lines of its standard error.
fn run_tool(bin: &Path, tool: &str, args: &[String], stdin: &[u8], input_name: &str) -> Result<Vec<u8>> {
    let exe = bin.join(tool);
    let mut child = Command::new(&exe)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::usage(format!("cannot run {}: {} (set --mlir-bin)", exe.display(), io_reason(&e))))?;
    // Write from another thread so a large output cannot deadlock the pipes.
    let mut pipe = child.stdin.take().expect("stdin was piped");
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&data);
    });
    let out = child
        .wait_with_output()
        .map_err(|e| Error::usage(format!("{tool} failed: {}", io_reason(&e))))?;
    let _ = writer.join();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).take(2).collect();
        let detail = lines.join(" | ").replace("<stdin>", input_name);
        return Err(Error::usage(format!("{tool} rejected {input_name}: {detail}")));
    }
    Ok(out.stdout)
}

/// MLIR text to LLVM IR text.
pub fn mlir_to_llvm_ir(input: &Input, mlir_bin: &Path, pipeline: &str) -> Result<Vec<u8>> {
    let llvm_dialect = if pipeline.trim().is_empty() {
        input.text.clone()
    } else {
        run_tool(mlir_bin, "mlir-opt", &[format!("--pass-pipeline={pipeline}")], &input.text, &input.name)?
    };
    run_tool(mlir_bin, "mlir-translate", &["--mlir-to-llvmir".to_string()], &llvm_dialect, &input.name)
}

/// MLIR text to LLVM IR text, the `front` pipeline run with the mlir-opt of
/// `front_bin` first (when it has passes), then `rest` with `mlir_bin`.
pub fn mlir_to_llvm_ir_split(input: &Input, front_bin: &Path, front: &str, mlir_bin: &Path, rest: &str) -> Result<Vec<u8>> {
    if front.trim().is_empty() {
        return mlir_to_llvm_ir(input, mlir_bin, rest);
    }
    let text = run_tool(front_bin, "mlir-opt", &[format!("--pass-pipeline={front}")], &input.text, &input.name)?;
    let fronted = Input { name: input.name.clone(), text, format: input.format };
    mlir_to_llvm_ir(&fronted, mlir_bin, rest)
}

#[cfg(test)]
mod tests {
    use super::default_pipeline;
    use std::process::Command;

    #[test]
    fn default_pipeline_is_the_one_pipelines_py_prints() {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../mlir-tests/lib/pipelines.py");
        let out = Command::new("python3")
            .args([script, "--mlir-version", super::MLIR_VERSION])
            .output()
            .expect("python3 runs pipelines.py");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(default_pipeline(), String::from_utf8_lossy(&out.stdout).trim());
    }

    #[test]
    fn default_pipeline_lowers_async_func_through_llvm() {
        let p = default_pipeline();
        assert!(p.starts_with("builtin.module(async-func-to-async-runtime,async-to-async-runtime,"), "{p}");
        assert!(p.ends_with(",reconcile-unrealized-casts)"), "{p}");
    }
}
