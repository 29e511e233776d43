//! Stage 2, lower: MLIR to LLVM IR text with MLIR 19's `mlir-opt` (the
//! async lowering pipeline) and `mlir-translate --mlir-to-llvmir`; the LLVM
//! pass pipeline itself runs in `jit.rs` on the parsed module.

use crate::error::{Error, Result};
use crate::input::{io_reason, Input};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The default `--pipeline` for MLIR input: the whole pipeline of the
/// MLIR version of `mlir_bin` (`.../llvm-N/bin`; MLIR 19 when the name does
/// not say) from mlir-tests/lib/pipelines.txt, read by the mlir-pipelines
/// crate: `anchor(async-func, to-runtime, ref-counting, to-llvm)`, what
/// `mlir-tests/lib/pipelines.py --llvm-prefix <prefix>` prints.
pub fn default_pipeline(mlir_bin: &Path) -> Result<String> {
    let number = mlir_pipelines::version_of_prefix(mlir_bin).unwrap_or(mlir_pipelines::DEFAULT_VERSION);
    let table = mlir_pipelines::Table::embedded().map_err(|e| Error::usage(e.to_string()))?;
    let version = table.version(number).map_err(|e| Error::usage(format!("--mlir-bin {}: {e}", mlir_bin.display())))?;
    Ok(version.default_pipeline())
}

/// `--fixed-lowering`: `pipeline` with async-parallel-for renamed to the
/// fixed pass of the MLIR version of `front_bin` (the mlir-opt that runs
/// it), and the plugin that holds it: `plugins` if given, else the one `make
/// lowering-fixes` builds, found from the harness executable
/// (`../lowering-fixes/...`, [`mlir_pipelines::plugin_relpath`]).
pub fn fixed_lowering(pipeline: &str, front_bin: &Path, plugins: &[PathBuf]) -> Result<(String, Vec<PathBuf>)> {
    let number = mlir_pipelines::version_of_prefix(front_bin).unwrap_or(mlir_pipelines::DEFAULT_VERSION);
    let table = mlir_pipelines::Table::embedded().map_err(|e| Error::usage(e.to_string()))?;
    let version = table.version(number).map_err(|e| Error::usage(format!("--fixed-lowering: {e}")))?;
    let fixed = version.fixed(pipeline).map_err(|e| Error::usage(format!("--fixed-lowering: {e}")))?;
    if !plugins.is_empty() {
        return Ok((fixed, plugins.to_vec()));
    }
    let relative = format!("../{}", mlir_pipelines::plugin_relpath(number));
    let plugin = crate::resolve::beside_harness(&[&relative], "async-parallel-for-fixed plugin", "build it with `make lowering-fixes`")?;
    Ok((fixed, vec![plugin]))
}

/// Checks that each plugin was built for the MLIR of `bin` (the file
/// `mlir-version` that lowering-fixes/build.sh writes next to it, when
/// there is one): mlir-opt would crash loading another version's.
pub fn check_plugins(plugins: &[PathBuf], bin: &Path) -> Result<()> {
    let number = mlir_pipelines::version_of_prefix(bin).unwrap_or(mlir_pipelines::DEFAULT_VERSION);
    for plugin in plugins {
        if !plugin.is_file() {
            return Err(Error::usage(format!("--pass-plugin {}: no such file", plugin.display())));
        }
        let stamp = plugin.with_file_name("mlir-version");
        if let Ok(built) = std::fs::read_to_string(&stamp) {
            let built = built.trim();
            if built.split('.').next() != Some(number.to_string().as_str()) {
                return Err(Error::usage(format!(
                    "--pass-plugin {} was built for MLIR {built}, but the mlir-opt in {} is MLIR {number}: build it for that version (make lowering-fixes)",
                    plugin.display(),
                    bin.display()
                )));
            }
        }
    }
    Ok(())
}

/// `--load-pass-plugin=PATH` for each plugin.
fn plugin_args(plugins: &[PathBuf]) -> Vec<String> {
    plugins.iter().map(|p| format!("--load-pass-plugin={}", p.display())).collect()
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

/// MLIR text to LLVM IR text; mlir-opt loads `plugins` first.
pub fn mlir_to_llvm_ir(input: &Input, mlir_bin: &Path, pipeline: &str, plugins: &[PathBuf]) -> Result<Vec<u8>> {
    let llvm_dialect = if pipeline.trim().is_empty() {
        input.text.clone()
    } else {
        let mut args = plugin_args(plugins);
        args.push(format!("--pass-pipeline={pipeline}"));
        run_tool(mlir_bin, "mlir-opt", &args, &input.text, &input.name)?
    };
    run_tool(mlir_bin, "mlir-translate", &["--mlir-to-llvmir".to_string()], &llvm_dialect, &input.name)
}

/// MLIR text to LLVM IR text, the `front` pipeline run with the mlir-opt of
/// `front_bin` first (when it has passes; it loads `plugins`), then `rest`
/// with `mlir_bin`.
pub fn mlir_to_llvm_ir_split(input: &Input, front_bin: &Path, front: &str, plugins: &[PathBuf], mlir_bin: &Path, rest: &str) -> Result<Vec<u8>> {
    if front.trim().is_empty() {
        return mlir_to_llvm_ir(input, mlir_bin, rest, &[]);
    }
    let mut args = plugin_args(plugins);
    args.push(format!("--pass-pipeline={front}"));
    let text = run_tool(front_bin, "mlir-opt", &args, &input.text, &input.name)?;
    let fronted = Input { name: input.name.clone(), text, format: input.format };
    mlir_to_llvm_ir(&fronted, mlir_bin, rest, &[])
}

#[cfg(test)]
mod tests {
    use super::default_pipeline;
    use std::path::Path;

    #[test]
    fn the_default_pipeline_is_that_of_mlir_bins_version() {
        let p19 = default_pipeline(Path::new("/opt/llvm-19/bin")).unwrap();
        assert!(p19.starts_with("builtin.module(async-func-to-async-runtime,async-to-async-runtime,"), "{p19}");
        assert!(p19.contains("finalize-memref-to-llvm"), "{p19}");
        let p16 = default_pipeline(Path::new("/opt/llvm-16/bin")).unwrap();
        assert!(p16.contains("convert-memref-to-llvm") && !p16.contains("finalize-memref"), "{p16}");
        assert_eq!(default_pipeline(Path::new("/opt/llvm/bin")).unwrap(), p19, "an unnamed prefix is MLIR 19");
        assert!(default_pipeline(Path::new("/opt/llvm-13/bin")).is_err());
    }
}
