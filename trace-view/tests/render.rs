//! trace-view renders a trace into a non-empty PNG, and refuses input
//! that is not a trace.

use std::path::PathBuf;
use std::process::Command;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("trace-view-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

const TRACE: &str = r#"{"traceEvents":[
{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"mlir-async-0"}},
{"name":"thread_name","ph":"M","pid":1,"tid":2,"args":{"name":"mlir-async-1"}},
{"name":"thread_name","ph":"M","pid":1,"tid":3,"args":{"name":"main"}},
{"name":"task","cat":"task","ph":"X","pid":1,"tid":1,"ts":1.0,"dur":10.5,"args":{"origin":"execute","route":"queued"}},
{"name":"task","cat":"task","ph":"X","pid":1,"tid":2,"ts":2.0,"dur":8.0,"args":{"origin":"after-token","route":"slot"}},
{"name":"task","cat":"task","ph":"X","pid":1,"tid":1,"ts":12.0,"dur":3.0,"args":{"origin":"after-group","route":"queued"}},
{"name":"wait","cat":"wait","ph":"X","pid":1,"tid":3,"ts":0.5,"dur":15.0}
]}"#;

#[test]
fn renders_a_non_empty_png() {
    let input = temp("small.json");
    let output = temp("small.png");
    std::fs::write(&input, TRACE).unwrap();
    let _ = std::fs::remove_file(&output);
    let out = Command::new(env!("CARGO_BIN_EXE_trace-view"))
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .arg("--width")
        .arg("400")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("3 lane(s), 4 bar(s)"));
    let png = std::fs::read(&output).unwrap();
    assert!(png.len() > 100, "PNG of {} bytes", png.len());
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // Width 400 in the IHDR chunk.
    assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 400);
}

#[test]
fn refuses_a_file_that_is_not_a_trace() {
    let input = temp("bad.json");
    std::fs::write(&input, "{\"notTrace\": 1}").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_trace-view"))
        .arg(&input)
        .arg("-o")
        .arg(temp("bad.png"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
