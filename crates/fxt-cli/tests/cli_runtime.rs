//! The `fxt` command on a trace written by the fxt runtime itself: the
//! strict checker accepts it, stats find its threads and durations, the
//! JSON conversion names its threads.

mod cli_support;
use cli_support::*;
use serde_json::Value;

#[test]
fn runtime_trace_checks_clean_and_converts() {
    let session = fxt::start(fxt::Config::new()).expect("session starts");
    fxt::set_thread_name("main-thread");
    for i in 0..10u64 {
        let _d = fxt::trace_duration_scope!("cli", "step", "i" => i);
        fxt::trace_instant!("cli", "tick", "i" => i, "label" => "text");
    }
    std::thread::spawn(|| {
        fxt::set_thread_name("helper");
        fxt::trace_duration_begin!("cli", "pair");
        fxt::trace_duration_end!("cli", "pair");
    })
    .join()
    .unwrap();
    let (bytes, _) = session.finish_to_vec().expect("collected");
    let file = tmp("runtime.fxt");
    std::fs::write(&file, &bytes).unwrap();

    let out = fxt(&["check", p(&file)]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));

    let out = fxt(&["stats", "--json", p(&file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    let durations = s["durations"].as_array().unwrap();
    let step = durations.iter().find(|d| d["name"] == "step").unwrap();
    assert_eq!(step["count"], 10);
    let pair = durations.iter().find(|d| d["name"] == "pair").unwrap();
    assert_eq!(pair["count"], 1);
    let names: Vec<_> = s["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"main-thread".to_owned()), "{names:?}");
    assert!(names.contains(&"helper".to_owned()), "{names:?}");

    let out = fxt(&["json", p(&file)]);
    assert!(out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    assert!(events
        .iter()
        .any(|e| e["ph"] == "M" && e["args"]["name"] == "helper"));
    assert_eq!(events.iter().filter(|e| e["ph"] == "X").count(), 10);
    assert_eq!(events.iter().filter(|e| e["ph"] == "i").count(), 10);
}
