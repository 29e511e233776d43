//! The harness's one error type: a one-line message and the exit code it
//! maps to (2 for bad input or usage, 1 for runs that failed).

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Bad input, bad flags, missing files or libraries: exit 2.
    Usage,
    /// The program ran and something went wrong: exit 1.
    Failed,
}

#[derive(Debug)]
pub struct Error {
    pub code: Code,
    pub message: String,
}

impl Error {
    pub fn usage(message: impl Into<String>) -> Error {
        Error { code: Code::Usage, message: one_line(message.into()) }
    }
    pub fn failed(message: impl Into<String>) -> Error {
        Error { code: Code::Failed, message: one_line(message.into()) }
    }
    pub fn exit_code(&self) -> i32 {
        match self.code {
            Code::Usage => 2,
            Code::Failed => 1,
        }
    }
}

/// Longest one-line message, in bytes.
const MAX_MESSAGE: usize = 1000;

/// Joins a multi-line message (LLVM's, a tool's stderr) into one line, cut
/// to a readable length (a path or a flag value may be megabytes).
pub fn one_line(s: String) -> String {
    let line = if !s.contains('\n') {
        s.trim_end().to_string()
    } else {
        s.lines().map(str::trim_end).filter(|l| !l.trim().is_empty()).collect::<Vec<_>>().join(" | ")
    };
    crate::text::cut_line(&line, MAX_MESSAGE)
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
