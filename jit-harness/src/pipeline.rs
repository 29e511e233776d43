//! Pipeline construction, in one place for the run under test and for
//! --reference, on top of the mlir-pipelines crate (mlir-tests/lib/
//! pipelines.txt): the default pipeline of an MLIR version, the pass-list
//! surgery that takes the parallelizing passes out (the sequential
//! reference) or keeps only them (--front-mlir-bin), --fixed-lowering's
//! rename and plugin, and the [`Lowering`] of each: which mlir-opt runs
//! which passes with which plugins, then which mlir-translate.

use crate::cli::Cli;
use crate::error::{Error, Result};
use crate::input::Format;
use std::path::{Path, PathBuf};

/// The front passes that turn loops into tasks: the reference drops them.
pub const PARALLELIZING_PASSES: &[&str] = &["async-parallel-for", "async-parallel-for-fixed"];

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

/// Splits a pass list at its top-level commas (commas inside `(...)`,
/// `{...}` and quotes belong to a pass).
fn split_top(list: &str) -> Vec<&str> {
    let (mut depth, mut quoted, mut start) = (0i32, false, 0usize);
    let mut out = Vec::new();
    for (i, c) in list.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '(' | '{' if !quoted => depth += 1,
            ')' | '}' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                out.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&list[start..]);
    out
}

fn is_parallelizing(pass: &str) -> bool {
    PARALLELIZING_PASSES.contains(&pass)
}

/// The passes of `pipeline` for which `keep(name)` holds, at any nesting;
/// an anchor (`builtin.module(...)`, `func.func(...)`) is kept with its
/// filtered list, or dropped when `keep_anchors` is false and nothing in it
/// is kept.
fn filter_pipeline(pipeline: &str, keep: &dyn Fn(&str) -> bool, keep_anchors: bool) -> String {
    let kept: Vec<String> = split_top(pipeline)
        .into_iter()
        .filter_map(|element| {
            let e = element.trim();
            let name_end = e.find(['{', '(']).unwrap_or(e.len());
            let name = e[..name_end].trim();
            if e[name_end..].starts_with('(') && e.ends_with(')') {
                let inner = filter_pipeline(&e[name_end + 1..e.len() - 1], keep, keep_anchors);
                return (keep_anchors || !inner.is_empty()).then(|| format!("{}({inner})", &e[..name_end]));
            }
            (!e.is_empty() && keep(name)).then(|| e.to_string())
        })
        .collect();
    kept.join(",")
}

/// `pipeline` without [`PARALLELIZING_PASSES`], at any nesting
/// (`builtin.module(async-parallel-for{...},func.func(...),...)`): the
/// sequential lowering of the reference.
pub fn sequential_pipeline(pipeline: &str) -> String {
    filter_pipeline(pipeline, &|p| !is_parallelizing(p), true)
}

/// Only the [`PARALLELIZING_PASSES`] of `pipeline`, in their anchors
/// (empty when it has none): what --front-mlir-bin runs.
pub fn parallelizing_pipeline(pipeline: &str) -> String {
    filter_pipeline(pipeline, &is_parallelizing, false)
}

/// `--fixed-lowering`: `pipeline` with async-parallel-for renamed to the
/// fixed pass of the MLIR version of `front_bin` (the mlir-opt that runs
/// it), and the plugin that holds it: `plugins` if given, else the one `make
/// lowering-fixes` builds, found from the harness executable
/// (`target/lowering-fixes/...` beside its `target/release/`,
/// [`mlir_pipelines::plugin_relpath`]).
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

/// One mlir-opt run: the mlir-opt of `bin`, loading the pass `plugins`
/// first, runs the pass pipeline `passes` (an empty one is skipped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub bin: PathBuf,
    pub passes: String,
    pub plugins: Vec<PathBuf>,
}

/// How MLIR becomes LLVM IR: the mlir-opt steps in order, then
/// `mlir-translate --mlir-to-llvmir` of `translate_bin`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lowering {
    pub steps: Vec<Step>,
    pub translate_bin: PathBuf,
}

/// The pipelines of one harness run: --pipeline (or the default of
/// --mlir-bin's MLIR version; with --fixed-lowering, its async-parallel-for
/// renamed), --mlir-bin, --front-mlir-bin, and the plugins the mlir-opt
/// that runs the parallelizing passes loads (--pass-plugin, or
/// --fixed-lowering's).
#[derive(Clone, Debug)]
pub struct Pipelines {
    pub pipeline: String,
    mlir_bin: PathBuf,
    front_bin: Option<PathBuf>,
    plugins: Vec<PathBuf>,
}

impl Pipelines {
    pub fn from_cli(cli: &Cli, format: Format) -> Result<Pipelines> {
        let pipeline = match &cli.pipeline {
            Some(p) => p.clone(),
            None => default_pipeline(&cli.mlir_bin)?,
        };
        // The mlir-opt that runs the parallelizing passes, and its plugins.
        let front_bin = cli.front_mlir_bin.as_ref().unwrap_or(&cli.mlir_bin);
        let (pipeline, plugins) = if cli.fixed_lowering && format == Format::Mlir {
            fixed_lowering(&pipeline, front_bin, &cli.pass_plugins)?
        } else {
            (pipeline, cli.pass_plugins.clone())
        };
        check_plugins(&plugins, front_bin)?;
        Ok(Pipelines { pipeline, mlir_bin: cli.mlir_bin.clone(), front_bin: cli.front_mlir_bin.clone(), plugins })
    }

    /// The lowering of the run under test: the whole pipeline with
    /// --mlir-bin's mlir-opt or, with --front-mlir-bin, the parallelizing
    /// passes with that one's first and the rest with --mlir-bin's.
    pub fn main(&self) -> Lowering {
        let steps = match &self.front_bin {
            Some(front) => vec![
                Step { bin: front.clone(), passes: parallelizing_pipeline(&self.pipeline), plugins: self.plugins.clone() },
                Step { bin: self.mlir_bin.clone(), passes: sequential_pipeline(&self.pipeline), plugins: Vec::new() },
            ],
            None => vec![Step { bin: self.mlir_bin.clone(), passes: self.pipeline.clone(), plugins: self.plugins.clone() }],
        };
        Lowering { steps, translate_bin: self.mlir_bin.clone() }
    }

    /// The lowering of the sequential reference: the pipeline without its
    /// parallelizing passes, with --mlir-bin's mlir-opt.
    pub fn sequential(&self) -> Lowering {
        let step = Step { bin: self.mlir_bin.clone(), passes: sequential_pipeline(&self.pipeline), plugins: Vec::new() };
        Lowering { steps: vec![step], translate_bin: self.mlir_bin.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parallelizing_pass_is_dropped_at_any_nesting() {
        assert_eq!(
            sequential_pipeline("builtin.module(async-parallel-for{async-dispatch=true num-workers=-1},async-to-async-runtime,func.func(a,b))"),
            "builtin.module(async-to-async-runtime,func.func(a,b))"
        );
        assert_eq!(sequential_pipeline("async-parallel-for,x"), "x");
        assert_eq!(sequential_pipeline("builtin.module(x,y)"), "builtin.module(x,y)");
        assert_eq!(sequential_pipeline("builtin.module(func.func(async-parallel-for),x)"), "builtin.module(func.func(),x)");
    }

    #[test]
    fn the_parallelizing_part_keeps_its_anchors_only() {
        assert_eq!(
            parallelizing_pipeline("builtin.module(async-parallel-for{num-workers=1 min-task-size=3},a,func.func(b))"),
            "builtin.module(async-parallel-for{num-workers=1 min-task-size=3})"
        );
        assert_eq!(parallelizing_pipeline("builtin.module(a,func.func(b))"), "");
    }

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

    #[test]
    fn the_front_bin_runs_the_parallelizing_passes_and_the_reference_drops_them() {
        let p = Pipelines {
            pipeline: "builtin.module(async-parallel-for{num-workers=1},a,func.func(b))".to_string(),
            mlir_bin: PathBuf::from("/m19/bin"),
            front_bin: Some(PathBuf::from("/m22/bin")),
            plugins: vec![PathBuf::from("/p/fix.so")],
        };
        let main = p.main();
        assert_eq!(main.steps.len(), 2);
        assert_eq!((main.steps[0].bin.as_path(), main.steps[0].passes.as_str()), (Path::new("/m22/bin"), "builtin.module(async-parallel-for{num-workers=1})"));
        assert_eq!(main.steps[0].plugins, vec![PathBuf::from("/p/fix.so")], "the front mlir-opt loads the plugins");
        assert_eq!(main.steps[1].passes, "builtin.module(a,func.func(b))");
        assert!(main.steps[1].plugins.is_empty());
        assert_eq!(main.translate_bin, PathBuf::from("/m19/bin"));
        let seq = p.sequential();
        let sequential = "builtin.module(a,func.func(b))".to_string();
        assert_eq!(seq.steps, vec![Step { bin: PathBuf::from("/m19/bin"), passes: sequential, plugins: vec![] }]);
        let whole = Pipelines { front_bin: None, ..p };
        let plugins = vec![PathBuf::from("/p/fix.so")];
        assert_eq!(whole.main().steps, vec![Step { bin: PathBuf::from("/m19/bin"), passes: whole.pipeline.clone(), plugins }]);
    }
}
