//! `host-server`: the DPAS agent host, configured from flags and files, with the demo
//! receivables domain under `--demo`; `host-server audit verify FILE` checks an exported
//! audit trail.

use std::net::TcpListener;
use std::process::ExitCode;

use clap::Parser;
use host_server::appfiles::AppFiles;
use host_server::config::{Cli, SessionSecret};
use host_server::doors;
use host_server::{lifecycle, AppBuilder, ServerConfig};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// Says what stopped the start, as every refusal of this binary does, and the exit code.
fn fail(e: impl std::fmt::Display, code: u8) -> ExitCode {
    eprintln!("host-server: {e}");
    ExitCode::from(code)
}

/// `host-server audit …`: offline commands over an exported audit trail.
#[derive(Debug, Parser)]
#[command(
    name = "host-server audit",
    about = "Commands over an exported audit trail"
)]
struct AuditCli {
    #[command(subcommand)]
    command: AuditCommand,
}

#[derive(Debug, clap::Subcommand)]
enum AuditCommand {
    /// Checks the hash chain of a JSON Lines export (`GET /api/audit/export`): exit 0 and a
    /// summary when it holds, 1 and the seq of the first broken or missing record when not.
    Verify {
        /// The export's file, or `-` for standard input.
        file: std::path::PathBuf,
    },
}

/// Runs `host-server audit …` (the arguments after `audit`).
fn audit(args: impl Iterator<Item = std::ffi::OsString>) -> ExitCode {
    let cli = AuditCli::parse_from(std::iter::once("host-server audit".into()).chain(args));
    let AuditCommand::Verify { file } = cli.command;
    let verified = if file.as_os_str() == "-" {
        dpas_governance::audit_chain::verify(std::io::stdin().lock())
    } else {
        match std::fs::File::open(&file) {
            Ok(f) => dpas_governance::audit_chain::verify(std::io::BufReader::new(f)),
            Err(e) => return fail(format_args!("{}: {e}", file.display()), 2),
        }
    };
    match verified {
        Ok(summary) => {
            println!("{summary}");
            ExitCode::SUCCESS
        }
        Err(broken) => {
            // "broken at seq N: why" (or at the line that could not be read).
            eprintln!("host-server: audit chain broken at {broken}");
            ExitCode::from(1)
        }
    }
}

/// mimalloc rather than glibc's malloc: a step allocates and frees many small blocks (the
/// decoded request's values, frames, NDJSON lines), and malloc/free was a fifth to a quarter
/// of the server's CPU in its profiles.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|first| first == "audit") {
        return audit(args);
    }
    // Trace export is read from the standard OTEL_* variables; a bad one stops the start.
    let traces = match host_server::otlp::TraceExport::from_env() {
        Ok(t) => t,
        Err(e) => return fail(e, 2),
    };
    // Built here, outside the server's runtime (its HTTP client is a blocking one).
    let provider = match traces.as_ref().map(|t| t.provider()).transpose() {
        Ok(p) => p,
        Err(e) => return fail(e, 2),
    };
    let logs = host_server::logs::layer(std::env::var("RUST_LOG").ok().as_deref());
    tracing_subscriber::registry()
        .with(logs)
        .with(provider.as_ref().map(host_server::otlp::layer))
        .init();
    let code = serve(traces.as_ref().map(host_server::otlp::TraceExport::shown));
    // After the drain: the batch still queued goes out before the process ends.
    if let Some(provider) = provider {
        if let Err(e) = provider.shutdown() {
            eprintln!("host-server: flushing traces: {e}");
        }
    }
    code
}

fn serve(traces: Option<String>) -> ExitCode {
    let config = match ServerConfig::from_cli(Cli::parse()) {
        Ok(c) => c,
        Err(e) => return fail(e, 2),
    };
    let files = match AppFiles::load(&config) {
        Ok(f) => f,
        Err(e) => return fail(e, 2),
    };
    match actix_web::rt::System::new().block_on(run(config, files, traces)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(e, 1),
    }
}

async fn run(
    config: ServerConfig,
    files: AppFiles,
    traces: Option<String>,
) -> Result<(), Box<dyn std::error::Error>> {
    let listener = lifecycle::bind_listener(config.listen, config.listen_backlog)?;
    let addr = listener.local_addr()?;
    let metrics = match config.metrics_listen {
        Some(at) => Some(serve_metrics(TcpListener::bind(at)?)?),
        None => None,
    };
    let sessions_matter = config.auth == host_server::config::AuthConfig::Session;
    if sessions_matter && config.session_secret == SessionSecret::RandomPerProcess {
        tracing::warn!("no --session-secret given: using a random per-process secret (sessions end with this process)");
    }
    let database = host_server::config::shown_database_url(&config.database_url);
    let model = config.model.to_string();
    let demo = config.demo;
    // The demo domain only under --demo: otherwise exactly the file's capabilities, if any.
    let (chat_config, mut app, with_demo) = if demo {
        let chat_config = dpas_demo::configured(&config, &files)?;
        let with_demo = dpas_demo::Demo::new();
        (
            chat_config,
            with_demo.install(AppBuilder::new(config)),
            Some(with_demo),
        )
    } else {
        (
            doors::configured(&config, &files)?,
            AppBuilder::new(config),
            None,
        )
    };
    if let Some(file) = files.capabilities {
        app = app.capability_file(file);
    }
    let state = app.build().await?;
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let (drain, deadline) = (state.engine.drain.clone(), state.config.drain_timeout);
    // Kept to stop the socket listening the moment a drain begins.
    let listeners = vec![listener.try_clone()?];
    let stopping = state.clone();
    let doors = doors::mount(chat_config);
    let server = match with_demo {
        // The demo's sign-in and reset are mounted ahead of the doors.
        Some(with_demo) => {
            let routes = with_demo.routes(doors);
            host_server::serve_with_signals(state, listener, workers, routes, false)?
        }
        None => host_server::serve_with_signals(state, listener, workers, doors, false)?,
    };
    println!(
        "listening on http://{addr} database={database} model={model}{}{}{}",
        if demo { " demo=on" } else { "" },
        metrics
            .as_ref()
            .map(|(at, _)| format!(" metrics=http://{at}/metrics"))
            .unwrap_or_default(),
        traces
            .map(|endpoint| format!(" traces={endpoint}"))
            .unwrap_or_default()
    );
    lifecycle::serve_until_drained(
        server,
        listeners,
        drain,
        deadline,
        lifecycle::shutdown_signal(),
    )
    .await?;
    if let Some((_, server)) = metrics {
        server.stop(true).await;
    }
    // The audit entries of the last steps are stored before the process ends.
    stopping.close().await;
    Ok(())
}

/// `GET /metrics` alone on its own address (`--metrics-listen`), e.g. one only the
/// scraper's network reaches.
fn serve_metrics(
    listener: TcpListener,
) -> std::io::Result<(std::net::SocketAddr, actix_web::dev::ServerHandle)> {
    let at = listener.local_addr()?;
    let server = actix_web::HttpServer::new(|| {
        actix_web::App::new().route(
            "/metrics",
            actix_web::web::get().to(host_server::telemetry::metrics_route),
        )
    })
    .workers(1)
    .disable_signals()
    .listen(listener)?
    .run();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    Ok((at, handle))
}
