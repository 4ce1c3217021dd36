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

/// The exit status of a collector that could not start or keep serving: 2, as every `diagwire`
/// command that could not run.
fn could_not_run() -> ExitCode {
    ExitCode::from(2)
}

/// `diagwire serve`: opens the collector on `--root`, listens on `--listen`, prints
/// `listening on ADDR` as the first line of standard output and serves until interrupted.
pub fn run(args: &ServeArgs) -> ExitCode {
    if let Err(e) = crate::observe::init_logging(args.log.as_deref(), args.log_format == "json") {
        eprintln!("error: {e}");
        return could_not_run();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return could_not_run();
        }
    };
    runtime.block_on(async {
        let collector = match Collector::open(args.config()) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {}: {e}", args.root.display());
                return could_not_run();
            }
        };
        let listener = match TcpListener::bind(args.listen.as_str()).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: cannot listen on {}: {e}", args.listen);
                return could_not_run();
            }
        };
        match listener.local_addr() {
            Ok(addr) => println!("listening on {addr}"),
            Err(_) => println!("listening on {}", args.listen),
        }
        let _ = std::io::stdout().flush();
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        match serve(listener, collector, shutdown).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                could_not_run()
            }
        }
    })
}
