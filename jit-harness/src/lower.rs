//! Stage 2, lower: MLIR to LLVM IR text with `mlir-opt` (the async
//! lowering pipeline, as [`crate::pipeline`] builds it) and
//! `mlir-translate --mlir-to-llvmir`; the LLVM pass pipeline itself runs in
//! `jit.rs` on the parsed module.

use crate::error::{Error, Result};
use crate::input::{io_reason, Format, Input};
use crate::pipeline::Lowering;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

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

/// Stage 2's one way in: the program as LLVM IR text. LLVM IR input is
/// taken as it is; MLIR goes through the `lowering`'s mlir-opt steps (each
/// loads its plugins; an empty pipeline is skipped) and `mlir-translate
/// --mlir-to-llvmir`.
pub fn to_llvm_ir(input: &Input, lowering: &Lowering) -> Result<Vec<u8>> {
    if input.format == Format::LlvmIr {
        return Ok(input.text.clone());
    }
    let mut text = input.text.clone();
    for step in lowering.steps.iter().filter(|s| !s.passes.trim().is_empty()) {
        let mut args: Vec<String> = step.plugins.iter().map(|p| format!("--load-pass-plugin={}", p.display())).collect();
        args.push(format!("--pass-pipeline={}", step.passes));
        text = run_tool(&step.bin, "mlir-opt", &args, &text, &input.name)?;
    }
    run_tool(&lowering.translate_bin, "mlir-translate", &["--mlir-to-llvmir".to_string()], &text, &input.name)
}
