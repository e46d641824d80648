//! An OpenAI-compatible vendor for the slow-vendor benchmark (`scripts/bench-vendor.sh`):
//! `POST …/chat/completions` answers a streamed text reply whose chunks are spread over
//! `--stream-ms` (2 s by default), as a real vendor streams a step. Written in Rust on the
//! server's own HTTP stack so that at thousands of streams in flight it is not what limits the
//! run. `GET /stats` answers what it served: requests, streams in flight now and at most, and
//! the p50/p99 of its streams' own durations (first byte of the request read to the last chunk
//! written), which the bench subtracts from the step's time to get the server's overhead.
//!
//! Prints `listening on http://127.0.0.1:PORT` first (scripts/lib/serve.sh reads it).
//!
//!   cargo run --profile server -p dpas-tests --features vendor-stand-in --example vendor-stand-in -- --stream-ms 2000

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::web::{self, Bytes};
use actix_web::{App, HttpResponse, HttpServer};
use clap::Parser;
use futures_util::stream;

#[derive(Parser, Debug, Clone)]
#[command(about = "A slow OpenAI-compatible vendor for the benchmark")]
struct Args {
    /// Where to listen; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,
    /// How long one reply streams, first chunk to last.
    #[arg(long, default_value_t = 2000)]
    stream_ms: u64,
    /// Text chunks in one reply (besides the role, finish and usage chunks).
    #[arg(long, default_value_t = 20)]
    chunks: u32,
    /// Worker threads (one per core by default).
    #[arg(long)]
    workers: Option<usize>,
}

/// What `GET /stats` reports. Durations are kept in a fixed histogram of milliseconds so that
/// recording one costs an increment, not an allocation.
struct Stats {
    requests: AtomicU64,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
    /// Stream durations by whole millisecond, the last bucket holding everything longer.
    millis: Mutex<Vec<u64>>,
}

const HISTOGRAM_MS: usize = 60_000;

impl Stats {
    fn begin(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.max_in_flight.fetch_max(now, Ordering::Relaxed);
    }

    fn end(&self, took: Duration) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        let ms = (took.as_millis() as usize).min(HISTOGRAM_MS);
        self.millis.lock().expect("stats lock")[ms] += 1;
    }

    fn percentile(histogram: &[u64], p: f64) -> Option<usize> {
        let total: u64 = histogram.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = ((total as f64) * p).ceil().max(1.0) as u64;
        let mut seen = 0;
        histogram.iter().position(|n| {
            seen += n;
            seen >= rank
        })
    }
}

/// Ends a stream's record when the response body is dropped: written to the end, or the
/// server gone mid-stream (a cancelled step).
struct Guard {
    stats: Arc<Stats>,
    started: Instant,
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.stats.end(self.started.elapsed());
    }
}

fn chunk(delta: &str, finish: Option<&str>) -> Bytes {
    let finish = finish.map_or("null".to_owned(), |f| format!("\"{f}\""));
    Bytes::from(format!(
        "data: {{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"bench\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
    ))
}

async fn completions(
    body: Bytes,
    args: web::Data<Args>,
    stats: web::Data<Arc<Stats>>,
) -> HttpResponse {
    let started = Instant::now();
    if serde_json::from_slice::<serde_json::Value>(&body).is_err() {
        return HttpResponse::BadRequest()
            .content_type("application/json")
            .body(
                r#"{"error":{"message":"the body is not JSON","type":"invalid_request_error"}}"#,
            );
    }
    stats.begin();
    let guard = Guard {
        stats: Arc::clone(&stats),
        started,
    };
    let chunks = args.chunks.max(1);
    let prompt_tokens = body.len() / 4;
    let pause = Duration::from_millis(args.stream_ms) / chunks;
    // 0: the role; 1..=chunks: text, each after a pause; then the finish, usage and [DONE].
    let parts = stream::unfold((0u32, guard), move |(i, guard)| async move {
        let bytes = match i {
            0 => chunk(r#"{"role":"assistant","content":""}"#, None),
            i if i <= chunks => {
                // Against the request's start, so that timer slack does not add up.
                tokio::time::sleep_until((started + pause * i).into()).await;
                chunk(&format!(r#"{{"content":"word{i} "}}"#), None)
            }
            i if i == chunks + 1 => {
                let mut end = chunk("{}", Some("stop")).to_vec();
                end.extend_from_slice(
                    format!(
                        "data: {{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"bench\",\"choices\":[],\"usage\":{{\"prompt_tokens\":{},\"completion_tokens\":{chunks},\"total_tokens\":{}}}}}\n\ndata: [DONE]\n\n",
                        prompt_tokens,
                        prompt_tokens + chunks as usize
                    )
                    .as_bytes(),
                );
                Bytes::from(end)
            }
            _ => return None, // `guard` drops here: the stream's end is recorded.
        };
        Some((Ok::<_, std::convert::Infallible>(bytes), (i + 1, guard)))
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .streaming(parts)
}

async fn report(stats: web::Data<Arc<Stats>>) -> HttpResponse {
    let histogram = stats.millis.lock().expect("stats lock").clone();
    HttpResponse::Ok().json(serde_json::json!({
        "requests": stats.requests.load(Ordering::Relaxed),
        "inFlight": stats.in_flight.load(Ordering::Relaxed),
        "maxInFlight": stats.max_in_flight.load(Ordering::Relaxed),
        "streamP50Ms": Stats::percentile(&histogram, 0.50),
        "streamP99Ms": Stats::percentile(&histogram, 0.99),
    }))
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let stats = Arc::new(Stats {
        requests: AtomicU64::new(0),
        in_flight: AtomicU64::new(0),
        max_in_flight: AtomicU64::new(0),
        millis: Mutex::new(vec![0; HISTOGRAM_MS + 1]),
    });
    let (data, shared) = (web::Data::new(args.clone()), web::Data::new(stats));
    let mut server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .app_data(shared.clone())
            .app_data(web::PayloadConfig::new(16 * 1024 * 1024))
            .route("/v1/chat/completions", web::post().to(completions))
            .route("/chat/completions", web::post().to(completions))
            .route("/stats", web::get().to(report))
    })
    // Thousands of streams at once: the accept queue and the per-worker limits are the
    // server's, not a bench's, so they are raised here.
    .backlog(16_384)
    .max_connections(100_000)
    .max_connection_rate(16_384);
    if let Some(workers) = args.workers {
        server = server.workers(workers);
    }
    // HTTP/1.1 or h2c, whichever the client's first bytes speak.
    let server = server.bind_auto_h2c(&args.listen)?;
    let addr = server.addrs()[0];
    println!("listening on http://{addr}");
    server.run().await
}
