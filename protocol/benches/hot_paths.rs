//! Throughput of the protocol's hot paths on real traffic: request decoding (recorded
//! requests, and Carla's with its history grown to 2, 200 and 400 messages), NDJSON frame
//! decoding and encoding, and wire-name assignment. Run with `cargo bench -p dpas-protocol`;
//! `-- WORD` runs only the cases whose names contain WORD (`-- 400` for the 400-message
//! request, e.g. under `perf record`). Figures are the CPU time a call takes, printed, never asserted (machines are noisy).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use dpas_protocol::ndjson::decode_all;
use dpas_protocol::wire_name::{assign_wire_names, WireKey};
use dpas_protocol::{decode_request, encode_frame_into, FrameDecoder};

/// The host-server binary's allocator, so that the figures are the server's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `fixtures/reference-traces/`, the folder `test_support::traces_dir` names (a bench builds
/// without the `test-support` feature).
fn traces() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/reference-traces")
}

/// `bench/`: the Carla request and the generator of grown ones.
fn bench_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench")
}

/// The files BENCH_REQUESTS names, each under its file name; without it, Carla's step 0
/// with its history grown to 2, 200 and 400 messages (`node bench/request.mjs --messages N`).
fn generated_requests() -> Vec<(String, Vec<u8>)> {
    if let Ok(paths) = std::env::var("BENCH_REQUESTS") {
        let mut out = Vec::new();
        for path in paths.split(':').filter(|p| !p.is_empty()) {
            let request = std::fs::read(path).expect("BENCH_REQUESTS names a readable file");
            let name = Path::new(path).file_name().map(|n| n.to_string_lossy());
            out.push((name.unwrap_or_default().into_owned(), request));
        }
        return out;
    }
    let script = bench_dir().join("request.mjs");
    let mut out = Vec::new();
    for messages in [2, 200, 400] {
        let run = Command::new("node")
            .arg(&script)
            .args(["--messages", &messages.to_string()])
            .output()
            .expect("node runs bench/request.mjs");
        assert!(run.status.success(), "bench/request.mjs failed: {run:?}");
        out.push((format!("{messages} messages"), run.stdout));
    }
    out
}

fn body_of(response: &[u8]) -> &[u8] {
    let split = response
        .windows(2)
        .position(|w| w == b"\n\n")
        .expect("headers end");
    &response[split + 2..]
}

/// The time this thread has run on a CPU (`/proc/thread-self/schedstat`, Linux), if known.
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Runs `f` for about a second of this thread's CPU time and returns the mean CPU time per
/// call (on a machine whose cores are shared with other work, the wall clock counts the time
/// the thread waited for a core); the wall clock's where the CPU time is not known.
fn measure(mut f: impl FnMut()) -> Duration {
    for _ in 0..50 {
        f();
    }
    let elapsed = |start: (Instant, Option<Duration>)| match (start.1, cpu_time()) {
        (Some(before), Some(now)) => now.saturating_sub(before),
        _ => start.0.elapsed(),
    };
    let mut n = 0u32;
    let start = (Instant::now(), cpu_time());
    while elapsed(start) < Duration::from_secs(1) {
        for _ in 0..100 {
            f();
        }
        n += 100;
    }
    elapsed(start) / n
}

/// Whether the case `name` runs: the arguments other than cargo's `--bench` are words, and a
/// case runs when it has one of them in its name, or when there are none.
fn selected(name: &str) -> bool {
    let mut words = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .peekable();
    words.peek().is_none() || words.any(|word| name.contains(&word))
}

/// Prints what `f` costs a call and the MB/s over `bytes`, when the case `name` is selected.
fn report(name: &str, bytes: usize, f: impl FnMut()) {
    if !selected(name) {
        return;
    }
    let per_call = measure(f);
    let mb_s = bytes as f64 / per_call.as_secs_f64() / 1e6;
    println!(
        "{name:<44} {:>10.2} µs/op {:>9.1} MB/s ({bytes} bytes)",
        per_call.as_secs_f64() * 1e6,
        mb_s
    );
}

/// Prints how long `decode_request` takes on `request`, and its MB/s.
fn report_decode(name: &str, request: &[u8]) {
    report(name, request.len(), || {
        black_box(decode_request(black_box(request)).expect("decodes"));
    });
}

fn main() {
    let dir = traces();
    let request = std::fs::read(dir.join("browser-carla-step2.request.json")).expect("trace");
    report_decode("decode_request (Carla step 2, 16 tools)", &request);

    let carla = std::fs::read(bench_dir().join("carla-step0.request.json")).expect("bench body");
    report_decode("decode_request (Carla step 0, 16 tools)", &carla);

    // Bodies with a grown history (bench/request.mjs), or those BENCH_REQUESTS names,
    // `:`-separated (scripts/bench-curves.sh).
    for (name, request) in generated_requests() {
        report_decode(&format!("decode_request ({name})"), &request);
    }

    let response = std::fs::read(dir.join("browser-carla-step0.response.txt")).expect("trace");
    let body = body_of(&response).to_vec();
    report(
        "NDJSON decode, whole body (Carla step 0)",
        body.len(),
        || {
            let (frames, end) = decode_all(black_box(&body));
            black_box((frames, end.is_ok()));
        },
    );
    report("NDJSON decode, 64-byte chunks", body.len(), || {
        let mut decoder = FrameDecoder::new();
        let mut out = Vec::new();
        for chunk in body.chunks(64) {
            decoder.push_into(chunk, &mut out);
        }
        black_box(out);
    });

    let (frames, _) = decode_all(&body);
    let mut buf = Vec::with_capacity(body.len());
    report("NDJSON encode (Carla step 0)", body.len(), || {
        buf.clear();
        for f in &frames {
            encode_frame_into(f, &mut buf);
        }
        black_box(&buf);
    });

    let ids: Vec<String> = (0..192)
        .map(|i| format!("view:screen-{}.component.capability{i}", i % 7))
        .collect();
    let keys: Vec<WireKey<'_>> = ids.iter().map(|id| WireKey::new(id, None)).collect();
    report("assign_wire_names (192 ids)", 0, || {
        black_box(assign_wire_names(black_box(&keys)));
    });
}
