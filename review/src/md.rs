//! The one way text from a schema reaches a report: names, values, descriptions and paths are
//! written into Markdown only through [`escape`], and onto a terminal only through [`terminal`].
//!
//! A pull request's author chooses every name in its schemas, and reviewers trust the comment, so
//! a name must not be able to end a table cell (`|`), close a code span (a backtick), open HTML or
//! an HTML comment (`<`, `>`, `&`), start a line of its own (line breaks), or reach a terminal as
//! a control sequence (hidden characters are escaped by the rule of [`diagwire_runtime::text`]). Written here rather than with a Markdown crate because the rules are the
//! few above and no crate escapes for the GitHub comment and the terminal both.
//!
//! The sentences a comparison writes ([`crate::finding::Finding::detail`], a counterexample's
//! notes and verdicts) quote names between [`OPEN`] and [`CLOSE`], two private-use characters,
//! instead of backticks: [`fragment`] renders each quoted name as a code span and the words around
//! it as text, both through [`escape`]; [`plain`] turns the marks back into backticks for JSON.
//! A name holding the marks themselves can at worst turn its own quote into escaped text.
//!
//! The review's comment ([`crate::report::review_md`]) is bounded too: GitHub refuses a
//! pull-request comment over 65,536 characters, and a comment cut by a tool in between may lose its
//! verdict. A comment of at most [`MAX_CHARS`] characters is written as it is; a longer one is
//! written again within a [`Budget`]: the verdict line, the counts and the headings always, the
//! reasons and the findings' table rows and entries in order while they fit (cut between two
//! findings, never inside one), and a line ([`omitted`]) saying how many are not shown and which
//! command prints them all.

use diagwire_runtime::text::{is_hidden, push_escaped};

/// Opens a quoted name in a finding's sentence (rendered as a code span).
pub const OPEN: char = '\u{e000}';
/// Closes a quoted name in a finding's sentence.
pub const CLOSE: char = '\u{e001}';

/// Where escaped text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum As {
    /// An inline code span (the fences are part of the result).
    Code,
    /// Inline text: a table cell, a list item, a heading.
    Text,
}

/// `s` made safe for Markdown `as_`: every control character, line break and bidirectional
/// override written as `\u{…}`, and a `|` escaped so it cannot end a table cell. As a code span,
/// the fence is one backtick longer than the longest run of backticks inside (padded with a space
/// when the text starts or ends with one), so nothing inside can close it, and HTML inside a code
/// span is never HTML. As text, the characters that start Markdown or HTML syntax, a link or a
/// mention (`\`, `` ` ``, `*`, `@`, `<`, `>`, `&`, a `]` that a `(` or `[` follows, and `_` or `~`
/// unless between two letters or digits, where they cannot emphasize) are escaped too; a line break never gets that
/// far, so nothing can start a heading or a block.
pub fn escape(s: &str, as_: As) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if is_hidden(c) {
            push_escaped(&mut out, c);
            continue;
        }
        match (as_, c) {
            (_, '|') => out.push_str("\\|"),
            (As::Code, c) => out.push(c),
            (As::Text, '<') => out.push_str("&lt;"),
            (As::Text, '>') => out.push_str("&gt;"),
            (As::Text, '&') => out.push_str("&amp;"),
            (As::Text, ']') if matches!(chars.get(i + 1), Some('(' | '[')) => {
                out.push_str("\\]");
            }
            (As::Text, '\\' | '`' | '*' | '@') => {
                out.push('\\');
                out.push(c);
            }
            (As::Text, '_' | '~') => {
                let word = |j: Option<&char>| j.is_some_and(|c| c.is_alphanumeric());
                let inside =
                    word(i.checked_sub(1).and_then(|j| chars.get(j))) && word(chars.get(i + 1));
                if !inside {
                    out.push('\\');
                }
                out.push(c);
            }
            (As::Text, c) => out.push(c),
        }
    }
    match as_ {
        As::Text => out,
        As::Code => fence(&out),
    }
}

/// `s` (already escaped) between backtick fences no run inside can close.
fn fence(s: &str) -> String {
    let (mut longest, mut run) = (0usize, 0usize);
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let ticks = "`".repeat(longest + 1);
    let pad = if s.is_empty()
        || s.starts_with('`')
        || s.ends_with('`')
        || (s.starts_with(' ') && s.ends_with(' '))
    {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{s}{pad}{ticks}")
}

/// `s` as an inline code span ([`escape`] with [`As::Code`]).
pub fn code(s: &str) -> String {
    escape(s, As::Code)
}

/// `s` as inline text ([`escape`] with [`As::Text`]).
pub fn text(s: &str) -> String {
    escape(s, As::Text)
}

/// A sentence with names quoted between [`OPEN`] and [`CLOSE`], as Markdown: each name a code
/// span, the rest text, all through [`escape`].
///
/// The words around the names may quote text of their own between backticks (a description
/// written in Markdown, a codec's message): each such pair is a code span through [`escape`] as
/// well, and a backtick left without its pair is escaped text.
pub fn fragment(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let mut rest = s;
    while let Some(start) = rest.find(OPEN) {
        words(&rest[..start], &mut out);
        let after = &rest[start + OPEN.len_utf8()..];
        let end = after.find(CLOSE).unwrap_or(after.len());
        out.push_str(&code(&after[..end]));
        rest = after.get(end + CLOSE.len_utf8()..).unwrap_or("");
    }
    words(&rest.replace(CLOSE, ""), &mut out);
    out
}

/// Text with code spans of its own: text, then a span, then text, and so on.
fn words(s: &str, out: &mut String) {
    let parts: Vec<&str> = s.split('`').collect();
    let paired = if parts.len() % 2 == 1 {
        parts.len()
    } else {
        parts.len() - 1
    };
    for (i, part) in parts.iter().enumerate() {
        if i >= paired {
            out.push_str("\\`");
            out.push_str(&text(part));
        } else if i % 2 == 0 {
            out.push_str(&text(part));
        } else {
            out.push_str(&code(part));
        }
    }
}

/// A sentence with quoted names as plain text, the names between backticks (the JSON outputs).
pub fn plain(s: &str) -> String {
    s.replace([OPEN, CLOSE], "`")
}

/// A message for a terminal: names between backticks and every control character and
/// bidirectional override written as `\u{…}`, except the line feeds that lay out a list of
/// problems (the problems themselves escape their line breaks where they are made).
pub fn terminal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in plain(s).chars() {
        if is_hidden(c) && c != '\n' {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// The most characters a Markdown report holds: under GitHub's 65,536 for a pull-request comment,
/// with room for what a workflow adds around it.
pub const MAX_CHARS: usize = 60_000;

/// The characters left for the findings (and reasons) of a report being bounded. Items are
/// taken in order; once one does not fit, nothing after it is taken, so a cut list is a prefix.
#[derive(Debug, Clone)]
pub struct Budget {
    left: usize,
    /// Whether an item did not fit: then nothing more is taken.
    cut: bool,
    /// The command that prints everything (`diagwire review --format json`), for [`omitted`].
    pub everything: &'static str,
}

impl Budget {
    /// Room for everything.
    pub fn unlimited(everything: &'static str) -> Self {
        Budget {
            left: usize::MAX,
            cut: false,
            everything,
        }
    }

    /// Room for `chars` characters.
    pub fn new(chars: usize, everything: &'static str) -> Self {
        Budget {
            left: chars,
            cut: false,
            everything,
        }
    }

    /// Whether `text` fits in what is left; takes its room when it does, and takes nothing more
    /// once something did not.
    pub fn take(&mut self, text: &str) -> bool {
        let n = text.chars().count();
        if !self.cut && n <= self.left {
            self.left -= n;
            true
        } else {
            self.cut = true;
            false
        }
    }
}

/// The line that stands for the `not_shown` of `total` `what` a bounded report leaves out.
pub fn omitted(not_shown: usize, total: usize, what: &str, budget: &Budget) -> String {
    format!(
        "*{not_shown} of {total} {what} not shown: the report is limited to {MAX_CHARS} \
         characters. `{}` prints them all.*\n\n",
        budget.everything
    )
}

/// `s` cut at its last line break before `max` characters, for a report whose parts that are
/// always shown are themselves too long: the verdict on the first line stays.
pub fn cut_lines(s: &str, max: usize) -> &str {
    let end = s.char_indices().nth(max).map_or(s.len(), |(i, _)| i);
    match s[..end].rfind('\n') {
        Some(i) if end < s.len() => &s[..=i],
        _ => &s[..end],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_name_is_written_as_it_always_was() {
        assert_eq!(
            code("event#DialStarted.timeout_ms"),
            "`event#DialStarted.timeout_ms`"
        );
        assert_eq!(
            text("release 1.0.0 → working tree"),
            "release 1.0.0 → working tree"
        );
        assert_eq!(
            text("review/tests/rules/FIELD_RENAMED/old"),
            "review/tests/rules/FIELD_RENAMED/old"
        );
        assert_eq!(
            fragment("\u{e000}Color\u{e001} has the new value \u{e000}blue\u{e001}"),
            "`Color` has the new value `blue`"
        );
        assert_eq!(
            fragment("derived: `status_source` says `derived`."),
            "derived: `status_source` says `derived`."
        );
        assert_eq!(fragment("one ` left"), "one \\` left");
    }

    #[test]
    fn a_budget_takes_items_in_order_until_one_does_not_fit() {
        let mut budget = Budget::new(10, "diagwire review --format json");
        assert!(budget.take("12345"));
        assert!(budget.take("é234"), "characters, not bytes");
        assert!(!budget.take("123"), "over what is left");
        assert!(!budget.take(""), "nothing after a cut");
        assert!(Budget::unlimited("x").take(&"y".repeat(MAX_CHARS * 2)));
        let line = omitted(3, 5, "findings", &budget);
        assert!(line.starts_with("*3 of 5 findings not shown"), "{line}");
        assert!(line.contains("`diagwire review --format json`"), "{line}");
    }

    #[test]
    fn a_cut_ends_at_a_line_break_within_the_limit() {
        assert_eq!(cut_lines("ab\ncd\nef\n", 7), "ab\ncd\n");
        assert_eq!(cut_lines("ab\ncd\n", 100), "ab\ncd\n");
        assert_eq!(
            cut_lines("ééé\nx", 3),
            "ééé",
            "no line break: cut at the limit"
        );
    }

    #[test]
    fn a_backtick_cannot_close_the_code_span_of_a_name() {
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("``x"), "``` ``x ```");
    }

    #[test]
    fn a_name_cannot_end_a_table_cell_break_a_line_or_open_html() {
        let hostile = "x|y\n**Safe**<!-- \u{1b}[31m";
        let c = code(hostile);
        assert!(
            !c.contains('\n') && !c.contains('\u{1b}') && !c.contains("x|y"),
            "{c}"
        );
        let t = text(hostile);
        assert!(
            !t.contains('<') && !t.contains("**") && !t.contains('\n'),
            "{t}"
        );
    }
}
