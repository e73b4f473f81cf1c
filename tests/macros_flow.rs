//! `trace_async_*!` and `trace_flow_*!`: ids correlate events across threads.
#![deny(warnings, clippy::all)]

mod macros_support;

use fxt::{
    trace_async_begin, trace_async_end, trace_async_instant, trace_duration_scope,
    trace_flow_begin, trace_flow_end, trace_flow_step,
};
use macros_support::{args, named, one, s, trace, ArgValue, EventKind};

#[test]
fn async_events_pair_across_threads() {
    let records = trace(|| {
        let id = fxt::next_async_id();
        trace_async_begin!("rpc", "request", id = id, "method" => "get");
        std::thread::spawn(move || {
            trace_async_instant!("rpc", "request", id = id, "stage" => "sent");
            trace_async_end!("rpc", "request", id = id, "status" => 200u32);
        })
        .join()
        .unwrap();
    });
    // Threads' records are in file order per thread; across threads, in
    // time order (a thread's chunk is written out when it exits).
    let mut request = named(&records, "request");
    request.sort_by_key(|e| e.timestamp);
    assert_eq!(request.len(), 3);
    let id = match request[0].kind {
        EventKind::AsyncBegin { id } => id,
        other => panic!("{other:?}"),
    };
    assert_eq!(request[1].kind, EventKind::AsyncInstant { id });
    assert_eq!(request[2].kind, EventKind::AsyncEnd { id });
    assert_eq!(args(request[0]), [("method".to_string(), s("get"))]);
    assert_eq!(args(request[1]), [("stage".to_string(), s("sent"))]);
    assert_eq!(
        args(request[2]),
        [("status".to_string(), ArgValue::U32(200))]
    );
    assert_ne!(request[0].thread, request[2].thread);
    assert!(request[0].timestamp <= request[1].timestamp);
    assert!(request[1].timestamp <= request[2].timestamp);
}

#[test]
fn flows_connect_durations() {
    let records = trace(|| {
        let flow = 77;
        {
            let _send = trace_duration_scope!("ipc", "send");
            trace_flow_begin!("ipc", "message", id = flow, "size" => 12u32);
        }
        std::thread::spawn(move || {
            {
                let _route = trace_duration_scope!("ipc", "route");
                trace_flow_step!("ipc", "message", id = flow);
            }
            let _receive = trace_duration_scope!("ipc", "receive");
            trace_flow_end!("ipc", "message", id = flow);
        })
        .join()
        .unwrap();
    });
    let mut message = named(&records, "message");
    message.sort_by_key(|e| e.timestamp);
    let message: Vec<_> = message.iter().map(|e| e.kind).collect();
    assert_eq!(
        message,
        [
            EventKind::FlowBegin { id: 77 },
            EventKind::FlowStep { id: 77 },
            EventKind::FlowEnd { id: 77 }
        ]
    );
    let begin = named(&records, "message")
        .into_iter()
        .find(|e| matches!(e.kind, EventKind::FlowBegin { .. }))
        .expect("flow begin");
    let send = one(&records, "send");
    assert_eq!(begin.thread, send.thread);
    assert_eq!(args(begin), [("size".to_string(), ArgValue::U32(12))]);
}
