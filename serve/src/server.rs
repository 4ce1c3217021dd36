//! Serving the router on a TCP listener: HTTP/1.1 connections through hyper with the
//! collector's header time-out and connection limit (axum's own `serve` sets neither), and the
//! `diagwire serve` command around it.

use std::future::Future;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::{Collector, ServeArgs, router};

/// Serves `collector` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    collector: Arc<Collector>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let limits = collector.config.limits.clone();
    let app = router(collector);
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return Ok(()),
            },
            () = &mut shutdown => return Ok(()),
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    // Out of descriptors or a connection reset before accept: try again shortly.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            () = &mut shutdown => return Ok(()),
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let header_timeout = limits.header_timeout;
        tokio::spawn(async move {
            let _permit = permit;
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(TokioIo::new(stream), service);
            // A connection that fails (a client gone, a time-out) ends on its own.
            let _ = connection.await;
        });
    }
}

/// `diagwire serve`: opens the collector on `--root`, listens on `--listen`, prints
/// `listening on ADDR` as the first line of standard output and serves until interrupted.
pub fn run(args: &ServeArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let collector = match Collector::open(args.config()) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {}: {e}", args.root.display());
                return ExitCode::FAILURE;
            }
        };
        let listener = match TcpListener::bind(args.listen).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: cannot listen on {}: {e}", args.listen);
                return ExitCode::FAILURE;
            }
        };
        let addr = listener.local_addr().map_or(args.listen, |a| a);
        println!("listening on {addr}");
        let _ = std::io::stdout().flush();
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        match serve(listener, collector, shutdown).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        }
    })
}
