//! A small server that can be traced while it runs, without a restart: it
//! registers as a trace provider and handles requests until Ctrl-C,
//! costing what disabled call sites cost until a trace manager opens a
//! window in it.
//!
//! ```text
//! terminal 1:  cargo run --release --example provider
//! terminal 2:  fxt trace list
//!              fxt trace start
//!              fxt trace snapshot -o now.fxt
//!              fxt trace stop -o t.fxt
//!              fxt stats t.fxt
//! ```
//!
//! `docs/guide/running-service.md` walks through it. Each request
//! is a duration `handle` (argument `id`) with `parse`, `compute` and
//! `respond` inside it, on one of two worker threads; the dispatcher
//! counts the requests in flight (counter `load`), a slow request is an
//! instant, and every 1000th request a log line.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fxt::{trace_counter, trace_duration, trace_duration_scope, trace_instant, trace_log};

/// The worker threads.
pub const WORKERS: u64 = 2;

/// Time between two requests' arrivals: the server idles most of the time.
const ARRIVAL: Duration = Duration::from_millis(1);

/// A request: its number and how much work it asks for.
struct Request {
    id: u64,
    size: u64,
}

/// Reads the request (here: a hash of its number stands for the bytes).
#[trace_duration(category = "server")]
fn parse(request: &Request) -> u64 {
    request
        .id
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .rotate_left(17)
}

/// The request's work: `size` rounds of arithmetic.
#[trace_duration(category = "server", args(size))]
fn compute(seed: u64, size: u64) -> u64 {
    (0..size).fold(seed, |acc, i| {
        acc.rotate_left(5) ^ i.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}

/// Answers the request: the bytes "sent".
#[trace_duration(category = "server")]
fn respond(result: u64) -> u64 {
    64 + result % 1024
}

/// One request, traced with its number.
fn handle(request: &Request) -> u64 {
    let _scope = trace_duration_scope!("server", "handle", "id" => request.id);
    let seed = parse(request);
    let result = compute(seed, request.size);
    if request.size > 40_000 {
        trace_instant!("server", "slow request", "id" => request.id, "size" => request.size);
    }
    respond(result)
}

/// Runs the server until `stop` is set: a dispatcher (this thread) hands
/// requests to the workers and calls `handled` with the number of requests
/// answered so far as answers come back. Returns that number.
pub fn serve(stop: &AtomicBool, mut handled: impl FnMut(u64)) -> u64 {
    let (requests, queue) = mpsc::sync_channel::<Request>(64);
    let queue = Arc::new(Mutex::new(queue));
    let (answers, answered) = mpsc::channel::<u64>();
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let queue = Arc::clone(&queue);
            let answers = answers.clone();
            std::thread::Builder::new()
                .name(format!("worker-{w}"))
                .spawn(move || loop {
                    // The lock is held only while waiting for the next
                    // request, not while handling it.
                    let next = queue.lock().map(|q| q.recv());
                    let Ok(Ok(request)) = next else { break };
                    if answers.send(handle(&request)).is_err() {
                        break;
                    }
                })
                .expect("spawn a worker")
        })
        .collect();
    drop(answers);
    let (mut sent, mut done, mut bytes) = (0u64, 0u64, 0u64);
    let mut answer = |bytes_sent: u64, done: &mut u64, bytes: &mut u64| {
        *done += 1;
        *bytes += bytes_sent;
        handled(*done);
        if done.is_multiple_of(1000) {
            trace_log!("server", "{done} requests answered, {bytes} bytes sent");
        }
    };
    while !stop.load(Ordering::Relaxed) {
        sent += 1;
        // Sizes vary the way a server's requests do: mostly small.
        let size = 1_000 + (sent * 7919) % 50_000;
        if requests.send(Request { id: sent, size }).is_err() {
            break;
        }
        trace_counter!("server", "load", "in flight" => sent - done);
        std::thread::sleep(ARRIVAL);
        while let Ok(b) = answered.try_recv() {
            answer(b, &mut done, &mut bytes);
        }
    }
    drop(requests);
    for b in answered {
        answer(b, &mut done, &mut bytes);
    }
    for w in workers {
        let _ = w.join();
    }
    done
}

fn main() {
    // Dormant until `fxt trace start`: one thread asleep on a socket.
    let _provider = fxt::register_provider("provider-example").expect("register as a provider");
    eprintln!(
        "provider-example: pid {}, serving; trace it from another terminal \
         (`fxt trace list`, `fxt trace start`); Ctrl-C stops it",
        std::process::id()
    );
    // Never set: the server runs until Ctrl-C ends the process (a window
    // open then keeps what it recorded: its trace is crash-safe).
    let forever = AtomicBool::new(false);
    serve(&forever, |_| {});
}
