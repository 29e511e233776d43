//! What checking one run's output costs: for every corpus program, its real
//! output (one run through the harness against our runtime) checked
//! against its check file with the in-process FileCheck. Two figures per
//! program: `afresh`, a FileCheck run on the output (what a new output
//! costs), and `repeat`, the same output checked again (what the harness
//! pays for the identical outputs most runs print: a comparison with the
//! remembered ones). Each is the median over 11 rounds (interleaved across
//! programs) of the mean time of one check, with the rounds' spread.
//!
//!   cargo bench -p jit-harness --bench filecheck_cost
//!   (needs target/release/jit-harness and libmlir_async_runtime.so built)

use jit_harness::filecheck::{CheckFile, Options};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const ROUNDS: usize = 11;
const CHECKS_PER_ROUND: usize = 1000;

struct Program {
    name: String,
    check: CheckFile,
    output: Vec<u8>,
    afresh_us: Vec<f64>,
    repeat_us: Vec<f64>,
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let release = root.join("target/release");
    let harness = release.join("jit-harness");
    let runtime = release.join("libmlir_async_runtime.so");
    assert!(harness.is_file() && runtime.is_file(), "build first: cargo build --release -p jit-harness -p mlir_async_runtime");
    let dir = std::env::temp_dir().join(format!("jit-harness-filecheck-cost-{}", std::process::id()));
    let lowered = Command::new("python3")
        .arg(root.join("mlir-tests/lib/corpus.py"))
        .args(["lower", "--out"])
        .arg(&dir)
        .output()
        .expect("python3");
    assert!(lowered.status.success(), "{}", String::from_utf8_lossy(&lowered.stderr));
    // The rows lit runs on our runtime, by the corpus's one manifest reader
    // and skip rule (mlir-tests/lib/manifest.py, rules.py): an expected
    // failure's output would not pass its check.
    let rows = Command::new("python3")
        .arg(root.join("mlir-tests/lib/manifest.py"))
        .arg("rows")
        .arg(dir.join("manifest.tsv"))
        .args(["--runtime-kind", "rust", "--columns", "name,check_file,check_prefix"])
        .output()
        .expect("python3");
    assert!(rows.status.success(), "{}", String::from_utf8_lossy(&rows.stderr));
    let manifest = String::from_utf8(rows.stdout).unwrap();
    let lib = jit_harness::toolchain::llvm_prefix().join("lib");
    let libs = format!("{}/libmlir_c_runner_utils.so,{}/libmlir_runner_utils.so", lib.display(), lib.display());
    let libs = libs.as_str();
    let mut programs = Vec::new();
    for line in manifest.lines().filter(|l| !l.trim().is_empty()) {
        let c: Vec<&str> = line.split('\t').collect();
        let (expected, name, check, prefix) = (c[0], c[2], c[3], c[4]);
        if expected != "pass" {
            continue;
        }
        let out = harness_command(&root, &dir.join("manifest.tsv"), name, &harness, &runtime, libs).output().unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let mut output = out.stdout;
        // Drop the summary line.
        output.truncate(output[..output.len() - 1].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1));
        let options = Options {
            check_prefixes: if prefix == "-" { vec![] } else { vec![prefix.to_string()] },
            ..Options::default()
        };
        let mut check = CheckFile::parse(check, &std::fs::read(check).unwrap(), &options).unwrap();
        check.check(&output).unwrap_or_else(|m| panic!("{name}: {}", m.headline));
        programs.push(Program { name: name.to_string(), check, output, afresh_us: Vec::new(), repeat_us: Vec::new() });
    }
    for _ in 0..ROUNDS {
        for p in programs.iter_mut() {
            let t = Instant::now();
            for _ in 0..CHECKS_PER_ROUND {
                assert!(p.check.check_afresh(&p.output).is_ok());
            }
            p.afresh_us.push(t.elapsed().as_secs_f64() * 1e6 / CHECKS_PER_ROUND as f64);
            let t = Instant::now();
            for _ in 0..CHECKS_PER_ROUND {
                assert!(p.check.check(&p.output).is_ok());
            }
            p.repeat_us.push(t.elapsed().as_secs_f64() * 1e6 / CHECKS_PER_ROUND as f64);
        }
    }
    println!("{:<20} {:>6} {:>5}  {:>24}  {:>24}", "program", "bytes", "lines", "afresh us (min-max)", "repeat us (min-max)");
    let (mut afresh, mut repeat) = (Vec::new(), Vec::new());
    let show = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[ROUNDS / 2], format!("{:>7.2} ({:.2}-{:.2})", v[ROUNDS / 2], v[0], v[ROUNDS - 1]))
    };
    for p in programs.iter_mut() {
        let (a, a_text) = show(&mut p.afresh_us);
        let (r, r_text) = show(&mut p.repeat_us);
        afresh.push(a);
        repeat.push(r);
        let lines = p.output.iter().filter(|&&b| b == b'\n').count();
        println!("{:<20} {:>6} {:>5}  {:>24}  {:>24}", p.name, p.output.len(), lines, a_text, r_text);
    }
    afresh.sort_by(f64::total_cmp);
    repeat.sort_by(f64::total_cmp);
    println!(
        "over programs: afresh median {:.2} us, largest {:.2} us; repeat median {:.2} us, largest {:.2} us",
        afresh[afresh.len() / 2],
        afresh[afresh.len() - 1],
        repeat[repeat.len() / 2],
        repeat[repeat.len() - 1]
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// The program's jit-harness command, echoing its output, from the corpus's
/// one command line (mlir-tests/lib/harness.py row: `env VAR=VAL... harness
/// ARGS...`, NUL-separated).
fn harness_command(root: &Path, manifest: &Path, name: &str, harness: &Path, runtime: &Path, libs: &str) -> Command {
    let out = Command::new("python3")
        .arg(root.join("mlir-tests/lib/harness.py"))
        .arg("row")
        .arg(manifest)
        .arg(name)
        .arg("--harness")
        .arg(harness)
        .arg("--runtime")
        .arg(runtime)
        .args(["--libs", libs, "--", "--echo"])
        .output()
        .expect("python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut words = text.split_terminator('\0').skip(1); // "env"
    let mut env = Vec::new();
    let program = loop {
        let word = words.next().expect("a harness after the environment");
        match word.split_once('=') {
            Some((k, v)) => env.push((k.to_string(), v.to_string())),
            None => break word,
        }
    };
    let mut cmd = Command::new(program);
    cmd.args(words).envs(env);
    cmd
}
