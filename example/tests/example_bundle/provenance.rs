//! Absence said out loud: derived relay-session statuses, declared API gaps, and who counted the
//! relay's counters, the mailboxes and the GPU memory.

use diagwire::v1::ValueSource;

use crate::support::*;

#[test]
fn relay_session_status_is_derived_and_api_gaps_are_declared() {
    let p = parsed();
    let mut checked = 0;
    for snap in p.members().iter().flat_map(|l| p.snapshots_of(l)) {
        checked += 1;
        let iroh = snap.body.iroh.as_ref().expect("iroh block");
        let session = iroh.relay_session.as_ref().expect("relay session");
        assert_eq!(session.status_source, ValueSource::Derived);
        assert!(
            iroh.api_gaps
                .iter()
                .any(|g| g.as_ref() == "RelayTunnel.status")
        );
        assert!(
            iroh.api_gaps
                .iter()
                .any(|g| g.as_ref() == "RemoteInfo.conn_type")
        );
    }
    assert!(checked >= 40, "{checked} snapshots");
}

#[test]
fn the_relay_counters_mailboxes_and_gpu_memory_say_who_counted_them() {
    let p = parsed();
    let mut servers = 0;
    let mut actors = 0;
    let mut gpus = 0;
    for snapshots in p.snapshots.values() {
        for s in snapshots {
            if let Some(server) = &s.body.relay_server {
                servers += 1;
                // Zeros of the first scrape are counted zeros, not a relay that cannot count.
                assert_eq!(server.counters_source, Some(ValueSource::Relay));
                assert!(server.active_sessions_provenance().is_reported());
                assert!(server.total_closes_provenance().is_reported());
            }
            for a in s.body.actors.iter().flat_map(|b| &b.actors) {
                actors += 1;
                assert_eq!(a.mailbox_source, Some(ValueSource::Measured));
                assert_eq!(
                    a.total_msgs_dropped_provenance(),
                    diagwire::Provenance::Reported(&0)
                );
            }
            if let Some(app) = &s.body.app {
                match app.gpu_mem_used_bytes_provenance(&app.api_gaps) {
                    diagwire::Provenance::Reported(_) => {
                        assert_eq!(app.gpu_mem_source, Some(ValueSource::Driver));
                        gpus += 1
                    }
                    diagwire::Provenance::Unavailable(diagwire::Unavailable::ApiGap(g)) => {
                        assert_eq!(g, "AppState.gpu_mem_used_bytes")
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
    }
    assert!(
        servers > 0 && actors > 0 && gpus > 0,
        "{servers} {actors} {gpus}"
    );
}
