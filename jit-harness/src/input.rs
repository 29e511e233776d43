//! Stage 1, load input: read the program from a file or standard input and
//! decide whether it is LLVM IR or MLIR.

use crate::cli::InputFormat;
use crate::error::{Error, Result};
use std::io::Read;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    LlvmIr,
    Mlir,
}

pub struct Input {
    /// For messages: the path, or `<stdin>`.
    pub name: String,
    pub text: Vec<u8>,
    pub format: Format,
}

pub fn load(path: &str, format: InputFormat) -> Result<Input> {
    let (name, text) = if path == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| Error::usage(format!("cannot read standard input: {e}")))?;
        ("<stdin>".to_string(), buf)
    } else {
        let meta = std::fs::metadata(path).map_err(|e| Error::usage(format!("cannot read {path}: {}", io_reason(&e))))?;
        if meta.is_dir() {
            return Err(Error::usage(format!("cannot read {path}: it is a directory")));
        }
        let text = std::fs::read(path).map_err(|e| Error::usage(format!("cannot read {path}: {}", io_reason(&e))))?;
        (path.to_string(), text)
    };
    if text.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(Error::usage(format!("{name} is empty")));
    }
    let format = match format {
        InputFormat::Ll => Format::LlvmIr,
        InputFormat::Mlir => Format::Mlir,
        InputFormat::Auto if path.ends_with(".ll") => Format::LlvmIr,
        InputFormat::Auto if path.ends_with(".mlir") => Format::Mlir,
        InputFormat::Auto => sniff(&text),
    };
    Ok(Input { name, text, format })
}

/// MLIR text names its operations with a dialect (`func.func`, `llvm.func`)
/// or starts with `module`; LLVM IR has neither.
fn sniff(text: &[u8]) -> Format {
    let s = String::from_utf8_lossy(text);
    let first = s
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("//") && !l.starts_with(';'))
        .unwrap_or("");
    if s.contains("func.func") || s.contains("llvm.func") || first.starts_with("module") || first.starts_with('#') {
        Format::Mlir
    } else {
        Format::LlvmIr
    }
}

/// `No such file or directory`, without Rust's "(os error 2)".
pub fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
