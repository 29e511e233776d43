//! The Rust reader and the Python reader of pipelines.txt print the same
//! pipelines for every version and option.

use std::process::Command;

fn python(args: &[&str]) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../mlir-tests/lib/pipelines.py");
    let out = Command::new("python3").arg(script).args(args).output().expect("python3 runs pipelines.py");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// pipelines.py's error line, when it fails.
fn python_fails(args: &[&str]) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../mlir-tests/lib/pipelines.py");
    let out = Command::new("python3").arg(script).args(args).output().expect("python3 runs pipelines.py");
    assert!(!out.status.success(), "pipelines.py {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).trim().to_string()
}

#[test]
fn every_pipeline_is_the_one_pipelines_py_prints() {
    let table = mlir_pipelines::Table::embedded().unwrap();
    let numbers: Vec<String> = table.numbers().map(|n| n.to_string()).collect();
    assert_eq!(numbers.join(" "), python(&["--versions"]));
    for n in table.numbers() {
        let v = table.version(n).unwrap();
        let s = n.to_string();
        assert_eq!(v.default_pipeline(), python(&["--mlir-version", &s]), "MLIR {n}");
        assert_eq!(v.pipeline(true, None, None), python(&["--mlir-version", &s, "--policy"]), "MLIR {n} --policy");
        assert_eq!(
            v.pipeline(false, Some(false), Some("async-parallel-for")),
            python(&["--mlir-version", &s, "--no-async-func", "--front", "async-parallel-for"]),
            "MLIR {n} --front"
        );
        assert_eq!(v.runner, python(&["--mlir-version", &s, "--runner"]), "MLIR {n} runner");
        assert_eq!(v.sequential(), python(&["--mlir-version", &s, "--sequential"]), "MLIR {n} --sequential");
        let front = "builtin.module(async-parallel-for{num-workers=1 min-task-size=3}),func.func(async-parallel-for)";
        match v.fixed(front) {
            Ok(fixed) => assert_eq!(
                v.pipeline(false, Some(false), Some(&fixed)),
                python(&["--mlir-version", &s, "--no-async-func", "--fixed-lowering", "--front", front]),
                "MLIR {n} --fixed-lowering"
            ),
            Err(e) => assert!(
                python_fails(&["--mlir-version", &s, "--fixed-lowering", "--front", front]).contains(&e.to_string()),
                "MLIR {n} --fixed-lowering: {e}"
            ),
        }
        if let Ok(openmp) = v.openmp_pipeline() {
            assert_eq!(openmp, python(&["--mlir-version", &s, "--openmp"]), "MLIR {n} --openmp");
        }
    }
}
