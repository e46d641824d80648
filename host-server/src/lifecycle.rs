//! Readiness and graceful shutdown: which steps are in flight, and the drain on SIGTERM.
//!
//! A step's run is its own task and outlives its response (a client that leaves never stops
//! settlement or persistence), so the HTTP server's own graceful stop, which waits for
//! connections only, is not enough: [`Drain`] counts the runs, and [`serve_until_drained`]
//! stops new connections, waits for the runs up to the deadline, cuts the rest (they settle
//! their open calls and persist, see `dpas_engine::run`), and only then stops the server.

use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use actix_web::dev::Server;
pub use dpas_engine::{Drain, RunGuard};

/// Runs `task` every `period` for as long as the server runs, from one period after the
/// call (the start already did the work once); a failure is logged as `what … failed` and
/// the next period tries again. Spawned on the current thread's task set (a worker's, or the
/// server's system).
pub fn every<F, Fut, E>(period: Duration, what: &'static str, mut task: F)
where
    F: FnMut() -> Fut + 'static,
    Fut: std::future::Future<Output = Result<(), E>> + 'static,
    E: std::fmt::Display,
{
    actix_web::rt::spawn(async move {
        let mut ticks = tokio::time::interval(period);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            if let Err(e) = task().await {
                tracing::warn!(error = %e, "{what} failed");
            }
        }
    });
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C).
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM; only Ctrl-C stops the server");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Seconds responses still open get to close once the runs are over.
pub const CLOSE_TIMEOUT_SECS: u64 = 5;

/// How long cut runs get to settle and persist, and connections to close, after the deadline.
const WRAP_UP: Duration = Duration::from_secs(10);

/// Runs `server` (built with `disable_signals`) until `stop` resolves, then drains:
/// new connections are refused at once (the listening sockets stop listening), new steps
/// on kept-alive connections get 503, in-flight runs get `deadline` to finish, runs still
/// going are cut and get a short while to persist, and then the server stops.
pub async fn serve_until_drained(
    server: Server,
    listeners: Vec<TcpListener>,
    drain: Drain,
    deadline: Duration,
    stop: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    let handle = server.handle();
    let serving = actix_web::rt::spawn(server);
    stop.await;
    drain.begin();
    handle.pause().await;
    for listener in &listeners {
        refuse_new_connections(listener);
    }
    let running = drain.active();
    println!(
        "draining: {running} step(s) in flight, deadline {}s",
        deadline.as_secs()
    );
    {
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
    }
    tracing::info!(running, "shutting down: waiting for in-flight steps");
    if tokio::time::timeout(deadline, drain.idle()).await.is_err() {
        tracing::warn!(
            running = drain.active(),
            "drain deadline reached: stopping the steps still running"
        );
        drain.cut();
        if tokio::time::timeout(WRAP_UP, drain.idle()).await.is_err() {
            tracing::error!(
                running = drain.active(),
                "steps did not wrap up after the drain deadline"
            );
        }
    }
    handle.stop(true).await;
    match serving.await {
        Ok(result) => result,
        Err(e) => Err(std::io::Error::other(e)),
    }
}

/// A socket listening on `addr` with a queue of `backlog` connections not yet accepted (std's
/// `TcpListener::bind` fixes it at 128), for `HttpServer::listen`. Address reuse is on, as
/// std's bind has it, so a restart binds while the old process's connections linger.
pub fn bind_listener(addr: SocketAddr, backlog: u32) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(i32::try_from(backlog).unwrap_or(i32::MAX))?;
    Ok(socket.into())
}

/// Makes a listening socket refuse new connections while the server's accept loop (paused)
/// still owns it: on Linux, shutting down a listening socket's read side stops it listening.
fn refuse_new_connections(listener: &TcpListener) {
    if let Err(e) = socket2::SockRef::from(listener).shutdown(std::net::Shutdown::Read) {
        tracing::warn!(error = %e, "cannot close the listening socket early; it closes when the server stops");
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;

    #[tokio::test]
    async fn idle_waits_for_every_guard_and_cut_reaches_each() {
        let drain = Drain::default();
        drain.idle().await;
        let mut a = drain.track();
        let b = drain.track();
        assert_eq!(drain.active(), 2);
        assert!(!a.is_cut());
        drain.cut();
        a.cut().await;
        assert!(b.is_cut());
        drop(a);
        assert!(
            drain.idle().now_or_never().is_none(),
            "one run is still in flight"
        );
        drop(b);
        drain.idle().await;
        assert_eq!(drain.active(), 0);
    }
}
