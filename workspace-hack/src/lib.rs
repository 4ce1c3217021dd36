//! No code: the crate's manifest turns on features of the tool's dependencies (see its comment).
