//! The compatibility matrix: for every record kind and every ordered pair of (writer, reader) among
//! the contract readers (the frozen releases, and the current schemas when they are not released),
//! values of the writer's types go through the reader's types and back without losing anything.
//!
//! A value of the writer's types is serialized, read by the reader's types, written back and read
//! again by the writer's types; it must come back equal. So fields both versions know are equal, the
//! writer's newer fields and event types reach an older reader as kept unknowns and come back, and a
//! newer reader shows an older record's missing fields as absent (writing them back adds nothing).
//! The pairs come from generated code (`diagwire::release_pairs!`), so cutting a release edits
//! nothing here.

use std::sync::atomic::{AtomicUsize, Ordering};

use arbitrary::Unstructured;
use diagwire::releases::READERS;
use diagwire::v1::RecordKind;
use diagwire_compat_tests::fuzzing::roundtrip_through;
use diagwire_compat_tests::rng::SplitMix64;

/// Generated values per cell of the matrix.
const VALUES_PER_CELL: u64 = 1_000;

/// Cells run, over every test of this file.
static CELLS: AtomicUsize = AtomicUsize::new(0);

/// Runs every cell of one record type: `VALUES_PER_CELL` values per ordered reader pair, and checks
/// that the pairs were all of them.
macro_rules! kind {
    ($name:ident, $t:ident) => {
        #[test]
        fn $name() {
            let mut cells = 0;
            macro_rules! cell {
                ($w:ty, $r:ty) => {{
                    let mut rng = SplitMix64(0xc0ffee ^ (line!() as u64) ^ (cells as u64) << 32);
                    let mut checked = 0;
                    for _ in 0..VALUES_PER_CELL {
                        let data = rng.bytes(4096);
                        if roundtrip_through::<$w, $r>(&mut Unstructured::new(&data)) {
                            checked += 1;
                        }
                    }
                    assert!(
                        checked >= VALUES_PER_CELL * 9 / 10,
                        "only {checked} of {VALUES_PER_CELL} inputs made a value"
                    );
                    cells += 1;
                }};
            }
            diagwire::release_pairs!(cell, $t);
            assert_eq!(
                cells,
                READERS.len() * READERS.len(),
                "every ordered reader pair"
            );
            CELLS.fetch_add(cells, Ordering::Relaxed);
        }
    };
}

kind!(boot_records_cross_every_release_pair, Identity);
kind!(event_records_cross_every_release_pair, EventRecord);
kind!(event_batches_cross_every_release_pair, EventBatch);
kind!(snapshots_cross_every_release_pair, Snapshot);
kind!(finalize_records_cross_every_release_pair, Finalize);
kind!(manifests_cross_every_release_pair, Manifest);
kind!(post_acks_cross_every_release_pair, PostAck);
kind!(error_bodies_cross_every_release_pair, ErrorBody);
kind!(runs_listings_cross_every_release_pair, RunsListing);
kind!(live_records_cross_every_release_pair, LiveRecord);
kind!(vastai_records_cross_every_release_pair, VastaiRecord);

#[test]
fn the_matrix_covers_every_record_kind_and_every_reader() {
    assert_eq!(
        RecordKind::ALL.len(),
        11,
        "a record kind was added: give it a row above"
    );
    assert!(
        READERS.len() >= 2,
        "the matrix needs at least two readers, has {}",
        READERS.len()
    );
    let versions: Vec<&str> = READERS.iter().map(|r| r.version).collect();
    for release in diagwire::releases::RELEASES {
        assert!(
            versions.contains(release),
            "release {release} has no reader"
        );
    }
}
