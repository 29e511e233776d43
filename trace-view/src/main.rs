//! trace-view: renders a trace written by the runtime
//! (`MLIR_ASYNC_RUNTIME_TRACE`, Chrome Trace Event JSON) as a timeline.
//!
//! One lane per thread (pool workers first, in index order, named
//! `worker N`; then the threads that blocked in a wait, the caller of
//! `main` as `main thread`), one bar per task, coloured by what made the
//! task ready (Execute blue, after a token orange, after a value green,
//! after a group red; blocking waits grey). Consecutive tasks of a lane
//! alternate between a dark and a light shade.
//!
//! Each `-o` names an output; its extension picks the format:
//! - `.svg`: the timeline with its text: title, lane names, a time axis in
//!   milliseconds and a legend of task origins with their counts;
//! - `.png`: the same picture without text (no font dependency).
//!
//! Usage: `trace-view TRACE.json -o OUT.svg [-o OUT.png] [--width PIXELS]`.

mod layout;
mod png;
mod svg;
mod trace;

use std::path::Path;
use std::process::ExitCode;

const USAGE: &str = "usage: trace-view TRACE.json -o OUT.svg|OUT.png [-o ...] [--width PIXELS]";

enum Format {
    Svg,
    Png,
}

fn format_of(path: &str) -> Result<Format, String> {
    match Path::new(path).extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("svg") => Ok(Format::Svg),
        Some("png") => Ok(Format::Png),
        _ => Err(format!("{path}: the output's extension must be .svg or .png")),
    }
}

fn run(args: &[String]) -> Result<String, String> {
    let (mut input, mut outputs, mut width) = (None, Vec::new(), 1600u32);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "-o" | "--output" => outputs.push(it.next().ok_or(USAGE)?.clone()),
            "--width" => {
                width = it.next().and_then(|w| w.parse().ok()).filter(|w| (400..=20_000).contains(w)).ok_or(
                    "--width takes a number of pixels from 400 to 20000",
                )?;
            }
            "-h" | "--help" => return Ok(USAGE.to_string()),
            _ if input.is_none() && !arg.starts_with('-') => input = Some(arg.clone()),
            _ => return Err(USAGE.to_string()),
        }
    }
    let (Some(input), false) = (input, outputs.is_empty()) else {
        return Err(USAGE.to_string());
    };
    let formats = outputs.iter().map(|o| format_of(o)).collect::<Result<Vec<_>, _>>()?;
    let text = std::fs::read_to_string(&input).map_err(|e| format!("cannot read {input}: {e}"))?;
    let lanes = trace::parse(&input, &text)?;
    if lanes.is_empty() {
        return Err(format!("{input} has no task or wait events"));
    }
    let bars: usize = lanes.iter().map(|l| l.bars.len()).sum();
    let name = Path::new(&input).file_name().map_or(input.clone(), |n| n.to_string_lossy().into_owned());
    let title = format!("{name}: {} bars on {} lanes", layout::thousands(bars), lanes.len());
    let picture = layout::layout(&title, &lanes, width);
    for (output, format) in outputs.iter().zip(formats) {
        match format {
            Format::Svg => svg::write(&picture, output)?,
            Format::Png => png::write(&picture, output)?,
        }
    }
    Ok(format!("{}: {} lane(s), {bars} bar(s)", outputs.join(", "), lanes.len()))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(message) => {
            println!("{message}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("trace-view: {message}");
            ExitCode::from(2)
        }
    }
}
