//! Reading a runtime trace (Chrome Trace Event JSON, as the runtime writes
//! it for `MLIR_ASYNC_RUNTIME_TRACE`) into lanes of bars.

use std::collections::HashMap;

use serde_json::Value;

/// What a bar stands for: a task, by what made it ready, or a blocking wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Execute,
    AfterToken,
    AfterValue,
    AfterGroup,
    Wait,
}

impl Kind {
    /// Every kind, in legend order.
    pub const ALL: [Kind; 5] = [Kind::Execute, Kind::AfterToken, Kind::AfterValue, Kind::AfterGroup, Kind::Wait];

    pub fn color(self) -> (u8, u8, u8) {
        match self {
            Kind::Execute => (41, 98, 200),
            Kind::AfterToken => (230, 126, 34),
            Kind::AfterValue => (39, 174, 96),
            Kind::AfterGroup => (192, 57, 43),
            Kind::Wait => (150, 150, 150),
        }
    }

    /// The legend's text.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Execute => "task from execute",
            Kind::AfterToken => "task after a token",
            Kind::AfterValue => "task after a value",
            Kind::AfterGroup => "task after a group",
            Kind::Wait => "blocking wait (outside the pool)",
        }
    }

    fn of(event: &Value) -> Kind {
        if event["cat"] == "wait" {
            return Kind::Wait;
        }
        match event["args"]["origin"].as_str() {
            Some("after-token") => Kind::AfterToken,
            Some("after-value") => Kind::AfterValue,
            Some("after-group") => Kind::AfterGroup,
            _ => Kind::Execute,
        }
    }
}

/// One task or wait, in microseconds since the runtime's first call.
#[derive(Clone, Copy, Debug)]
pub struct Bar {
    pub start: f64,
    pub end: f64,
    pub kind: Kind,
}

/// One thread's bars, sorted by start.
pub struct Lane {
    /// The thread's name in the trace (`mlir-async-N` for workers).
    pub thread: String,
    pub bars: Vec<Bar>,
}

impl Lane {
    pub fn is_worker(&self) -> bool {
        worker_index(&self.thread).is_some()
    }

    /// The name shown: `worker N`, `main thread`, or the thread's own.
    pub fn label(&self) -> String {
        match worker_index(&self.thread) {
            Some(index) => format!("worker {index}"),
            None if self.thread == "main" => "main thread".to_string(),
            None => self.thread.clone(),
        }
    }
}

fn worker_index(thread: &str) -> Option<u64> {
    thread.strip_prefix("mlir-async-").and_then(|n| n.parse().ok())
}

/// Sort key of a lane: workers by index, then the others by name.
fn lane_key(lane: &Lane) -> (u8, u64, String) {
    match worker_index(&lane.thread) {
        Some(index) => (0, index, String::new()),
        None => (1, 0, lane.thread.clone()),
    }
}

/// The lanes of the trace in `text` (`path` names it in errors); only
/// threads with at least one bar get a lane.
pub fn parse(path: &str, text: &str) -> Result<Vec<Lane>, String> {
    let trace: Value = serde_json::from_str(text).map_err(|e| format!("{path} is not JSON: {e}"))?;
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
                    return Err(format!("{path}: event without ts/dur: {event}"));
                };
                bars.entry(tid).or_default().push(Bar { start: ts, end: ts + dur, kind: Kind::of(event) });
            }
            _ => {}
        }
    }
    let mut lanes: Vec<Lane> = bars
        .into_iter()
        .map(|(tid, mut bars)| {
            bars.sort_by(|a, b| a.start.total_cmp(&b.start));
            let thread = names.remove(&tid).unwrap_or_else(|| format!("tid {tid}"));
            Lane { thread, bars }
        })
        .collect();
    lanes.sort_by_key(lane_key);
    Ok(lanes)
}
