//! Canonical readings of values the contract keeps under deprecated spellings.
//!
//! An open enum never loses a value, so records written before a value was deprecated still read.
//! Counting per value must fold the deprecated spelling into its canonical one, or one meaning is
//! split across two strings; these functions are that fold.

use crate::v1::RelayCloseInitiator;

/// The side that ended a relay session, with a reason the initiator value itself implied.
///
/// `remote` (what 1.0.0 writers wrote) is the same side as `peer`; `idle_timeout` is a reason, not
/// a side: the relay closed an idle session, so it reads as `relay` with the reason
/// `idle_timeout`. Canonical values (`relay`, `peer`, `transport`, `unknown`) and values this
/// version does not know come back unchanged, with no implied reason.
pub fn relay_close(initiator: &RelayCloseInitiator) -> (RelayCloseInitiator, Option<&'static str>) {
    match initiator {
        RelayCloseInitiator::Remote => (RelayCloseInitiator::Peer, None),
        RelayCloseInitiator::IdleTimeout => (RelayCloseInitiator::Relay, Some("idle_timeout")),
        other => (other.clone(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deprecated_initiators_fold_into_canonical_sides() {
        assert_eq!(
            relay_close(&RelayCloseInitiator::Remote),
            (RelayCloseInitiator::Peer, None)
        );
        assert_eq!(
            relay_close(&RelayCloseInitiator::IdleTimeout),
            (RelayCloseInitiator::Relay, Some("idle_timeout"))
        );
        for side in [
            RelayCloseInitiator::Relay,
            RelayCloseInitiator::Peer,
            RelayCloseInitiator::Transport,
            RelayCloseInitiator::Unknown,
        ] {
            assert_eq!(relay_close(&side), (side.clone(), None));
        }
        let other: RelayCloseInitiator = serde_json::from_str("\"operator\"").unwrap();
        assert_eq!(relay_close(&other), (other.clone(), None));
    }
}
