//! The top-level help: every command on one line, grouped in the order a run's records flow — the
//! contract they follow, a run's bundle, the collector that gathers it, the fleet dataset of many
//! runs. clap lists subcommands as one flat list, so the groups are rendered here, from each
//! command's own one-line `about` (the rest of its doc is its `--help`).

use clap::{CommandFactory, FromArgMatches};

/// The groups, in the order they are shown, and their commands in order.
const GROUPS: &[(&str, &[&str])] = &[
    (
        "The contract (its schemas and their review)",
        &["diff", "review", "changelog", "output-schema"],
    ),
    (
        "A run's bundle",
        &[
            "validate", "summary", "check", "compare", "parity", "convert", "upgrade",
        ],
    ),
    ("The collector", &["serve", "replay"]),
    (
        "The fleet dataset (feature `fleet`)",
        &["export", "compact", "query", "fleet"],
    ),
];

/// Parses the command line of `T`, with the grouped help.
pub fn parse<T: CommandFactory + FromArgMatches>() -> T {
    let matches = command::<T>().get_matches();
    T::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// `T`'s command with the grouped list of its subcommands as its help.
pub fn command<T: CommandFactory>() -> clap::Command {
    let cmd = T::command();
    let listing = listing(&cmd);
    cmd.help_template(format!(
        "{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{listing}\nOptions:\n{{options}}\n\n\
         `diagwire COMMAND --help` says more of each command.{{after-help}}"
    ))
}

/// The groups' headings, each followed by its commands, one line each.
fn listing(cmd: &clap::Command) -> String {
    let width = GROUPS
        .iter()
        .flat_map(|(_, names)| names.iter())
        .map(|n| n.len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (i, (heading, names)) in GROUPS.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(heading);
        out.push_str(":\n");
        for name in *names {
            let about = cmd
                .find_subcommand(name)
                .and_then(|c| c.get_about())
                .map(|a| a.to_string())
                .unwrap_or_default();
            out.push_str(&format!("  {name:width$}  {about}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command the tool has is in exactly one group, every group names only commands
    /// the tool has, and each command's line fits a terminal of 100 columns.
    #[test]
    fn every_command_is_listed_once_on_one_line() {
        let cmd = crate::Cli::command();
        let listed: Vec<&str> = GROUPS.iter().flat_map(|(_, n)| n.iter().copied()).collect();
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let name = sub.get_name();
            let times = listed.iter().filter(|n| **n == name).count();
            assert_eq!(
                times, 1,
                "`{name}` is listed {times} times in the help's groups"
            );
        }
        for name in &listed {
            assert!(
                cmd.find_subcommand(name).is_some(),
                "the help lists `{name}`, which is no command"
            );
        }
        let help = command::<crate::Cli>().render_help().to_string();
        for line in help.lines() {
            assert!(
                line.chars().count() <= 100,
                "a help line is longer than 100 columns: {line}"
            );
        }
    }
}
