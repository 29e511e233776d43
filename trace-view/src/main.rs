//! trace-view: renders a trace written by the runtime
//! (`MLIR_ASYNC_RUNTIME_TRACE`, Chrome Trace Event JSON) as a PNG timeline.
//!
//! One lane per thread (pool workers first, in index order, then the
//! threads that blocked in a wait), one bar per task. The picture has no
//! text (no font dependency); its key:
//! - x: time, from the first event to the last; a tick every tenth;
//! - bar colour, by what made the task ready: Execute blue, after a token
//!   orange, after a value green, after a group red; blocking waits grey;
//! - consecutive tasks of a lane alternate between a dark and a light
//!   shade, so that back-to-back tasks stay distinguishable.
//!
//! Usage: `trace-view TRACE.json -o OUT.png [--width PIXELS]`.

use std::collections::HashMap;
use std::process::ExitCode;

use plotters::prelude::*;
use serde_json::Value;

struct Bar {
    start: f64,
    end: f64,
    color: (u8, u8, u8),
}

struct Lane {
    name: String,
    bars: Vec<Bar>,
}

fn color(event: &Value) -> (u8, u8, u8) {
    if event["cat"] == "wait" {
        return (150, 150, 150);
    }
    match event["args"]["origin"].as_str() {
        Some("after-token") => (230, 126, 34),
        Some("after-value") => (39, 174, 96),
        Some("after-group") => (192, 57, 43),
        _ => (41, 98, 200),
    }
}

fn lighter((r, g, b): (u8, u8, u8)) -> (u8, u8, u8) {
    let up = |c: u8| c + (255 - c) / 3;
    (up(r), up(g), up(b))
}

/// Sort key of a lane: workers by index, then the others by name.
fn lane_key(name: &str) -> (u8, u64, String) {
    match name.strip_prefix("mlir-async-").and_then(|n| n.parse().ok()) {
        Some(index) => (0, index, String::new()),
        None => (1, 0, name.to_string()),
    }
}

fn load(path: &str) -> Result<Vec<Lane>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let trace: Value = serde_json::from_str(&text).map_err(|e| format!("{path} is not JSON: {e}"))?;
    let events = trace["traceEvents"]
        .as_array()
        .ok_or_else(|| format!("{path} has no traceEvents array"))?;
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut bars: HashMap<u64, Vec<Bar>> = HashMap::new();
    for event in events {
        let tid = event["tid"].as_u64().unwrap_or(0);
        match event["ph"].as_str() {
            Some("M") if event["name"] == "thread_name" => {
                names.insert(tid, event["args"]["name"].as_str().unwrap_or("").to_string());
            }
            Some("X") => {
                let (Some(ts), Some(dur)) = (event["ts"].as_f64(), event["dur"].as_f64()) else {
                    return Err(format!("event without ts/dur: {event}"));
                };
                bars.entry(tid).or_default().push(Bar { start: ts, end: ts + dur, color: color(event) });
            }
            _ => {}
        }
    }
    let mut lanes: Vec<Lane> = bars
        .into_iter()
        .map(|(tid, mut bars)| {
            bars.sort_by(|a, b| a.start.total_cmp(&b.start));
            let name = names.remove(&tid).unwrap_or_else(|| format!("tid {tid}"));
            Lane { name, bars }
        })
        .collect();
    lanes.sort_by_key(|lane| lane_key(&lane.name));
    Ok(lanes)
}

fn render(lanes: &[Lane], out: &str, width: u32) -> Result<(), String> {
    const LANE: u32 = 36;
    const GAP: u32 = 8;
    const MARGIN: u32 = 20;
    let height = MARGIN * 2 + lanes.len().max(1) as u32 * (LANE + GAP) + 12;
    let root = BitMapBackend::new(out, (width, height)).into_drawing_area();
    let err = |e: DrawingAreaErrorKind<_>| format!("cannot draw {out}: {e:?}");
    root.fill(&WHITE).map_err(err)?;
    let all = lanes.iter().flat_map(|l| l.bars.iter());
    let t0 = all.clone().map(|b| b.start).fold(f64::INFINITY, f64::min);
    let t1 = all.map(|b| b.end).fold(f64::NEG_INFINITY, f64::max);
    let span = if t1 > t0 { t1 - t0 } else { 1.0 };
    let plot_width = (width - 2 * MARGIN) as f64;
    let x = |t: f64| MARGIN as i32 + ((t - t0) / span * plot_width) as i32;
    for (index, lane) in lanes.iter().enumerate() {
        let top = (MARGIN + index as u32 * (LANE + GAP)) as i32;
        let bottom = top + LANE as i32;
        // The lane's background: a worker lane is light grey, others beige.
        let background = if lane.name.starts_with("mlir-async-") { RGBColor(240, 240, 240) } else { RGBColor(250, 240, 225) };
        root.draw(&Rectangle::new([(MARGIN as i32, top), (width as i32 - MARGIN as i32, bottom)], background.filled()))
            .map_err(err)?;
        for (n, bar) in lane.bars.iter().enumerate() {
            let (r, g, b) = if n % 2 == 0 { bar.color } else { lighter(bar.color) };
            // At least one pixel wide, so every task is visible.
            let (left, right) = (x(bar.start), x(bar.end).max(x(bar.start) + 1));
            root.draw(&Rectangle::new([(left, top + 2), (right, bottom - 2)], RGBColor(r, g, b).filled()))
                .map_err(err)?;
        }
    }
    // Time axis with a tick every tenth of the span.
    let axis = (height - MARGIN) as i32;
    root.draw(&PathElement::new(vec![(MARGIN as i32, axis), (width as i32 - MARGIN as i32, axis)], BLACK))
        .map_err(err)?;
    for tick in 0..=10 {
        let tx = x(t0 + span * tick as f64 / 10.0);
        root.draw(&PathElement::new(vec![(tx, axis), (tx, axis + 6)], BLACK)).map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

fn run(args: &[String]) -> Result<String, String> {
    let usage = "usage: trace-view TRACE.json -o OUT.png [--width PIXELS]";
    let (mut input, mut output, mut width) = (None, None, 1600u32);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "-o" | "--output" => output = Some(it.next().ok_or(usage)?.clone()),
            "--width" => {
                width = it.next().and_then(|w| w.parse().ok()).filter(|w| *w >= 200).ok_or(usage)?;
            }
            "-h" | "--help" => return Ok(usage.to_string()),
            _ if input.is_none() && !arg.starts_with('-') => input = Some(arg.clone()),
            _ => return Err(usage.to_string()),
        }
    }
    let (Some(input), Some(output)) = (input, output) else {
        return Err(usage.to_string());
    };
    let lanes = load(&input)?;
    if lanes.is_empty() {
        return Err(format!("{input} has no task or wait events"));
    }
    render(&lanes, &output, width)?;
    let tasks: usize = lanes.iter().map(|l| l.bars.len()).sum();
    Ok(format!("{output}: {} lane(s), {tasks} bar(s)", lanes.len()))
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
