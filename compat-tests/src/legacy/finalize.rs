//! Mirror of the finalize record: swactor's orchestrator posts `{"exit_reason": …}`.

use arbitrary::{Arbitrary, Result, Unstructured};
use serde::{Deserialize, Serialize};

fn exit_reason(u: &mut Unstructured<'_>) -> Result<String> {
    super::mostly(u, &["completed", "orchestrator_shutdown", "deploy_failed"])
}

/// The finalize body as the orchestrator builds it (a one-key JSON object).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Arbitrary)]
pub struct Finalize {
    /// Why the run ended.
    #[arbitrary(with = exit_reason)]
    pub exit_reason: String,
}
