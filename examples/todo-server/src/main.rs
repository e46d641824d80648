//! `todo-server`: host-server's flags (`host-server --help`), its own todo domain, and a
//! sign-in by name. `--model scripted:script.json` runs offline.

use std::net::TcpListener;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use host_server::config::Cli;
use host_server::ServerConfig;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let matches = Cli::command()
        .name("todo-server")
        .about("A todo list with an assistant, on host-server")
        .get_matches();
    let config = match Cli::from_arg_matches(&matches)
        .map_err(|e| e.to_string())
        .and_then(config_of)
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("todo-server: {e}");
            return ExitCode::from(2);
        }
    };
    match actix_web::rt::System::new().block_on(run(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("todo-server: {e}");
            ExitCode::FAILURE
        }
    }
}

/// host-server's rules, with this example's defaults: its own sign-in (session cookies) unless
/// `--auth` says otherwise, its own database file, and a random per-process session secret when
/// none is given (sessions then end with the process).
fn config_of(mut cli: Cli) -> Result<ServerConfig, String> {
    if cli.demo {
        return Err("--demo is host-server's demo; todo-server has its own domain".to_owned());
    }
    cli.database
        .get_or_insert_with(|| "sqlite://.data/todos.sqlite3".to_owned());
    if cli.session_secret.is_none() {
        tracing::warn!("no --session-secret given: using a random per-process secret (sessions end with this process)");
        let random = || uuid::Uuid::new_v4().simple().to_string();
        cli.session_secret = Some(random() + &random());
    }
    ServerConfig::from_cli_with_own_sign_in(cli).map_err(|e| e.to_string())
}

async fn run(config: ServerConfig) -> Result<(), Box<dyn std::error::Error>> {
    let listener = TcpListener::bind(config.listen)?;
    let addr = listener.local_addr()?;
    let line = format!(
        "listening on http://{addr} database={} model={}",
        config.database_url, config.model
    );
    let (state, chat) = todo_server::build(config).await?;
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let server = host_server::serve_with(state, listener, workers, todo_server::routes(chat))?;
    println!("{line}");
    server.await?;
    Ok(())
}
