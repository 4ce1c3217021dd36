//! The unit vocabulary: every `x-unit` the schemas being edited may use, what it means, and the
//! spellings it replaced. One list, so that one quantity has one spelling across the contract (a
//! process id written `id` in one block and `pid` in another, or a signal written `signal-number`
//! beside `signal`, tells a reader two things where there is one).
//!
//! [`crate::load_current`] refuses a unit that is not listed, a retired spelling, and a property
//! name that carries different units in different definitions. The review reads a change between
//! two spellings of one quantity with [`same_quantity`]: the number on the wire means what it
//! meant, so nothing breaks.

use std::collections::BTreeMap;

use diagwire_runtime::shape::escape_pointer_token;

use crate::definitions;
use crate::ordered::J;
use crate::problem::{Problems, SchemaProblem};

/// Every unit, with what a number in it is.
pub const UNITS: &[(&str, &str)] = &[
    ("bits-per-s", "a rate in bits per second"),
    ("bytes", "a size or an amount of data in bytes"),
    ("bytes-per-s", "a rate in bytes per second"),
    ("celsius", "a temperature in degrees Celsius"),
    ("cores", "CPU capacity in cores (fractions allowed)"),
    ("count", "how many of something"),
    ("exit-code", "a process exit code"),
    ("gb", "a size in gigabytes, as the provider reports it"),
    (
        "generation",
        "a counter that says which incarnation of something a record is about",
    ),
    (
        "hash",
        "a hash value: compared for equality, never as a quantity",
    ),
    ("hops", "a number of network hops"),
    (
        "id",
        "an identifier: compared for equality, never as a quantity",
    ),
    (
        "index",
        "a position in an ordered set (a pipeline stage, a list entry)",
    ),
    ("kib", "a size in kibibytes"),
    ("load-average", "a kernel load average"),
    (
        "logical-clock",
        "a logical clock value, comparable within one writer only",
    ),
    ("mb", "a size in megabytes, as the provider reports it"),
    ("mbit-per-s", "a rate in megabits per second"),
    (
        "metric",
        "a counter or gauge value in the metric's own unit",
    ),
    ("mib", "a size in mebibytes"),
    ("ms", "a duration in milliseconds"),
    (
        "ms-epoch",
        "a wall-clock time in milliseconds since the Unix epoch",
    ),
    ("multiplier", "a dimensionless factor"),
    ("packets", "a number of network packets"),
    ("percent", "a percentage, 0 to 100"),
    ("pid", "an operating-system process id"),
    ("port", "a TCP or UDP port number"),
    ("ppm", "parts per million"),
    ("ratio", "a fraction, 0 to 1"),
    ("s", "a duration in seconds"),
    (
        "s-epoch",
        "a wall-clock time in seconds since the Unix epoch",
    ),
    ("sequence", "a sequence number, increasing per writer"),
    ("signal", "a POSIX signal number"),
    ("ticks", "a number of protocol ticks (SWIM periods)"),
    ("usd", "an amount in US dollars"),
    ("usd-per-hour", "a price in US dollars per hour"),
    (
        "vast-reported",
        "a value in whatever unit vast.ai reports it",
    ),
    ("version", "a version number, increasing per writer"),
    ("watts", "a power in watts"),
];

/// Spellings no longer written, with the unit that replaced each: the same quantity.
pub const RETIRED: &[(&str, &str)] = &[("signal-number", "signal")];

/// Units that say more precisely what a more general unit said: (specific, general). A field that
/// moves from the general unit to the specific one keeps its meaning.
pub const REFINES: &[(&str, &str)] = &[("pid", "id")];

/// Whether a number in unit `old` means the same as one in unit `new`: the same unit, a retired
/// spelling and its replacement, or a general unit made specific.
pub fn same_quantity(old: &str, new: &str) -> bool {
    old == new
        || RETIRED.iter().any(|&(r, to)| r == old && to == new)
        || REFINES.iter().any(|&(s, g)| g == old && s == new)
}

/// Every unit problem of `files`, which have passed [`crate::load`].
pub(crate) fn problems(files: &[(String, String, J)]) -> Problems {
    let mut out = Problems::new();
    // The first unit seen for each property name, and where.
    let mut first: BTreeMap<String, (String, String)> = BTreeMap::new();
    for (path, name, def) in definitions(files) {
        let Some(props) = def.get("properties").and_then(J::as_obj) else {
            continue;
        };
        for (key, prop) in props {
            let here = format!(
                "/$defs/{}/properties/{}",
                escape_pointer_token(name),
                escape_pointer_token(key)
            );
            let (unit, at) = match prop.get("x-unit").and_then(J::as_str) {
                Some(u) => (u, format!("{here}/x-unit")),
                None => match prop
                    .get("items")
                    .and_then(|i| i.get("x-unit"))
                    .and_then(J::as_str)
                {
                    Some(u) => (u, format!("{here}/items/x-unit")),
                    None => continue,
                },
            };
            let mut problem = |msg: String| out.push(SchemaProblem::new(path, at.as_str(), msg));
            if let Some((_, to)) = RETIRED.iter().find(|(r, _)| *r == unit) {
                problem(format!("unit `{unit}` is a retired spelling: write `{to}`"));
                continue;
            }
            if !UNITS.iter().any(|(u, _)| *u == unit) {
                problem(format!(
                    "unit `{unit}` is not in the profile's unit list (schemas/README.md): use a listed unit, or add this one there and to `schema/src/units.rs`"
                ));
                continue;
            }
            match first.get(key.as_str()) {
                Some((u, _)) if u == unit => {}
                Some((u, there)) => problem(format!(
                    "`{key}` is in `{unit}` here but in `{u}` at {there}: one field name is one quantity across the contract"
                )),
                None => {
                    first.insert(key.clone(), (unit.to_owned(), format!("{path}#{here}")));
                }
            }
        }
    }
    out
}
