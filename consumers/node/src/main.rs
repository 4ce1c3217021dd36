//! A swactor node as a consumer of diagwire, on the library's default build (serde and serde_json
//! only): it builds a `DialStarted`, a `DialOutcome` and a snapshot with constructors, setting
//! optional fields by name, and writes them as the files a collector would stage.
//!
//! `diagwire-consumer-node OUT` writes `OUT/boot.json`, `OUT/events-000001.json` and
//! `OUT/snapshot-000001.json`; `diagwire validate OUT/*.json` checks them.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use diagwire::v1::{
    DialOutcome, DialResult, DialStarted, EventRecord, Identity, PeerReachability, PeerState,
    Snapshot, SnapshotBody, SnapshotTrigger,
};
use diagwire::{NodeId, NodeIdHex};

const RUN_ID: &str = "consumer-node-run";
const T0: u64 = 1_779_733_870_000;

fn main() -> ExitCode {
    let Some(out) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: diagwire-consumer-node OUT");
        return ExitCode::from(2);
    };
    match run(&out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}

fn run(out: &Path) -> std::io::Result<()> {
    let me = NodeId::from([0x11; 32]);
    let peer = NodeId::from([0x22; 32]);

    let mut identity = Identity::new(me.to_hex(), me.short(), "stage", RUN_ID, T0, 0);
    identity.stage_index = Some(0);
    identity.stage_count = Some(2);
    identity.binary_version = Some(env!("CARGO_PKG_VERSION").to_owned());

    let started = EventRecord::new(me, 1, T0 + 100, DialStarted::new(peer, 1, 5_000));
    let outcome = EventRecord::new(
        me,
        2,
        T0 + 160,
        DialOutcome::new(peer, 1, DialResult::Success, 60),
    );

    let mut reachability = PeerReachability::new(NodeIdHex::from(peer), PeerState::Alive, vec![]);
    reachability.last_dial_started_at_ms = Some(T0 + 100);
    reachability.last_dial_outcome = Some("Success".to_owned());
    reachability.last_dial_duration_ms = Some(60);
    let snapshot = Snapshot::new(
        identity.clone(),
        RUN_ID,
        format!("{}-0", me.short()),
        T0 + 5_000,
        2,
        SnapshotTrigger::Periodic,
        SnapshotBody::new(vec![reachability]),
    );

    std::fs::create_dir_all(out)?;
    write(&out.join("boot.json"), &identity)?;
    write(&out.join("events-000001.json"), &vec![started, outcome])?;
    write(&out.join("snapshot-000001.json"), &snapshot)?;
    println!("wrote 3 record files to {}", out.display());
    Ok(())
}

fn write(path: &Path, value: &impl serde::Serialize) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    std::fs::write(path, text + "\n")
}
