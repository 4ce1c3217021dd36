//! `diagwire serve`: with the feature `serve` it starts the collector on the given address and
//! prints where it listens; without it, it says how to get it.

use crate::common;

#[cfg(feature = "serve")]
use std::io::{Read, Write};
use std::process::Command;

#[test]
fn serve_runs_the_collector_or_says_how_to_build_it() {
    for listen in ["127.0.0.1:0", "localhost:0"] {
        serves_on(listen);
    }
}

/// Starts `diagwire serve --listen LISTEN`, asks it for its runs, and stops it.
#[cfg(feature = "serve")]
fn serves_on(listen: &str) {
    let root = tempfile::tempdir().unwrap();
    let (collector, addr) = common::collector::serve_on(root.path(), listen);
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    s.write_all(b"GET /diag/runs HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    drop(collector);
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.ends_with("[]"), "{reply}");
}

/// Without the feature `serve`, the command says how to build it, with exit status 2.
#[cfg(not(feature = "serve"))]
fn serves_on(listen: &str) {
    let root = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_diagwire"))
        .args(["serve", "--listen", listen, "--root"])
        .arg(root.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--features serve"), "{err}");
}

#[test]
fn a_duration_without_a_unit_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_diagwire"))
        .args([
            "serve",
            "--root",
            ".",
            "--listen",
            "127.0.0.1:0",
            "--finalize-wait",
            "5",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let want = if cfg!(feature = "serve") {
        "write a duration like"
    } else {
        "--features serve"
    };
    assert!(err.contains(want), "{err}");
}

/// `--listen` takes `HOST:PORT`; anything else is refused before the collector starts, with
/// exit status 2, as every command's usage error.
#[test]
fn a_listen_address_that_is_not_host_and_port_is_refused() {
    for listen in ["8080", "localhost", "host:port", "::1:8080", "a b:80"] {
        let root = tempfile::tempdir().unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_diagwire"))
            .args(["serve", "--listen", listen, "--root"])
            .arg(root.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{listen}");
        let err = String::from_utf8_lossy(&out.stderr);
        if cfg!(feature = "serve") {
            assert!(err.contains("--listen"), "{listen}: {err}");
        }
    }
}
