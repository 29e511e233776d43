//! trace-view renders a trace into a PNG and a labelled SVG, and refuses
//! input that is not a trace.

use std::path::PathBuf;
use std::process::{Command, Output};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("trace-view-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn trace_view(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trace-view")).args(args).output().unwrap()
}

// Two workers and the main thread, over 15 us.
const TRACE: &str = r#"{"traceEvents":[
{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"mlir-async-0"}},
{"name":"thread_name","ph":"M","pid":1,"tid":2,"args":{"name":"mlir-async-1"}},
{"name":"thread_name","ph":"M","pid":1,"tid":3,"args":{"name":"main"}},
{"name":"task","cat":"task","ph":"X","pid":1,"tid":1,"ts":1.0,"dur":10.5,"args":{"origin":"execute","route":"queued"}},
{"name":"task","cat":"task","ph":"X","pid":1,"tid":2,"ts":2.0,"dur":8.0,"args":{"origin":"after-token","route":"slot"}},
{"name":"task","cat":"task","ph":"X","pid":1,"tid":1,"ts":12.0,"dur":3.0,"args":{"origin":"after-group","route":"queued"}},
{"name":"wait","cat":"wait","ph":"X","pid":1,"tid":3,"ts":0.5,"dur":15.0}
]}"#;

/// The trace above, rendered as (PNG bytes, SVG text), 400 pixels wide.
fn render_small() -> (Vec<u8>, String) {
    let input = temp("small.json");
    let (png, svg) = (temp("small.png"), temp("small.svg"));
    std::fs::write(&input, TRACE).unwrap();
    let _ = std::fs::remove_file(&png);
    let _ = std::fs::remove_file(&svg);
    let out = trace_view(&[input.as_ref(), "-o".as_ref(), png.as_ref(), "-o".as_ref(), svg.as_ref(), "--width".as_ref(), "400".as_ref()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("3 lane(s), 4 bar(s)"));
    (std::fs::read(&png).unwrap(), std::fs::read_to_string(&svg).unwrap())
}

#[test]
fn renders_a_non_empty_png() {
    let (png, _) = render_small();
    assert!(png.len() > 100, "PNG of {} bytes", png.len());
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // Width 400 in the IHDR chunk.
    assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 400);
}

/// The text of every <text> element, in document order.
fn texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("the SVG is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants().filter(|n| n.has_tag_name("text")).map(|n| n.text().unwrap_or("").to_string()).collect()
}

#[test]
fn the_svg_names_the_lanes_in_order() {
    let (_, svg) = render_small();
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"400\""));
    let texts = texts(&svg);
    let lanes: Vec<&String> = texts.iter().filter(|t| t.starts_with("worker ") || *t == "main thread").collect();
    assert_eq!(lanes, ["worker 0", "worker 1", "main thread"]);
}

#[test]
fn the_svg_has_a_time_axis_in_milliseconds() {
    let (_, svg) = render_small();
    let ticks: Vec<String> = texts(&svg).into_iter().filter(|t| t.ends_with(" ms")).collect();
    // 15 us: a tick every 0.002 ms, from 0.
    assert_eq!(ticks.first().map(String::as_str), Some("0.000 ms"));
    assert!(ticks.contains(&"0.014 ms".to_string()), "{ticks:?}");
    assert!(ticks.len() >= 5, "{ticks:?}");
    assert!(svg.contains("time since the first event (ms)"));
}

#[test]
fn the_svg_has_a_legend_of_task_origins_with_counts() {
    let (_, svg) = render_small();
    let texts = texts(&svg);
    for entry in [
        "task from execute (1)",
        "task after a token (1)",
        "task after a value (0)",
        "task after a group (1)",
        "blocking wait (outside the pool) (1)",
    ] {
        assert!(texts.iter().any(|t| t == entry), "no legend entry {entry:?} in {texts:?}");
    }
}

#[test]
fn a_large_trace_gives_a_small_svg() {
    // 100,000 tasks on one worker: merged into pixel spans.
    let mut events = vec![r#"{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"mlir-async-0"}}"#.to_string()];
    for i in 0..100_000 {
        events.push(format!(
            r#"{{"name":"task","cat":"task","ph":"X","pid":1,"tid":1,"ts":{i}.0,"dur":0.5,"args":{{"origin":"execute","route":"queued"}}}}"#
        ));
    }
    let input = temp("large.json");
    let svg = temp("large.svg");
    std::fs::write(&input, format!("{{\"traceEvents\":[{}]}}", events.join(","))).unwrap();
    let out = trace_view(&[input.as_ref(), "-o".as_ref(), svg.as_ref()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.len() < 200_000, "SVG of {} bytes", text.len());
    assert!(texts(&text).iter().any(|t| t == "task from execute (100,000)"));
}

#[test]
fn refuses_a_file_that_is_not_a_trace() {
    let input = temp("bad.json");
    std::fs::write(&input, "{\"notTrace\": 1}").unwrap();
    let out = trace_view(&[input.as_ref(), "-o".as_ref(), temp("bad.png").as_ref()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("trace-view: "));
}

#[test]
fn refuses_an_output_of_unknown_format() {
    let input = temp("small-for-format.json");
    std::fs::write(&input, TRACE).unwrap();
    let out = trace_view(&[input.as_ref(), "-o".as_ref(), temp("x.jpg").as_ref()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be .svg or .png"));
}
