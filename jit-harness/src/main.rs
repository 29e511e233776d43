//! Thin entry point; the harness lives in the library part.

fn main() {
    std::process::exit(jit_harness::main_with_args(std::env::args_os()));
}
