//! `diagwire summary` and `diagwire compare`: the post-incident report of a bundle.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use diagwire::bundle::read::Limits;
use diagwire_summary::{compare, html, render, summarize_walk, tsv};

/// Output formats of `diagwire summary`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Markdown (the default on a terminal).
    Md,
    /// JSON, in the shape `docs/summary.md` documents.
    Json,
    /// One self-contained HTML page with plots.
    Html,
    /// Tab-separated values of one view (`--view`).
    Tsv,
}

/// The TSV views.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum View {
    /// Per snapshot: the observer's SWIM opinion of every node.
    Reachability,
    /// Every event that names another node.
    Timeline,
}

use crate::fail;

fn progress_bar(files: usize) -> Option<indicatif::ProgressBar> {
    (std::io::stderr().is_terminal() && files >= 200).then(|| {
        let bar = indicatif::ProgressBar::new(files as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} files {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    })
}

fn emit(out: Option<&Path>, text: &str) -> ExitCode {
    match out {
        Some(path) => match std::fs::write(path, text) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(&format!("{}: {e}", path.display())),
        },
        None => {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
    }
}

/// Like [`emit`], for output written piece by piece.
fn emit_with(
    out: Option<&Path>,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> ExitCode {
    let done = match out {
        Some(path) => std::fs::File::create(path).and_then(|f| {
            let mut w = std::io::BufWriter::new(f);
            write(&mut w)?;
            w.flush()
        }),
        None => {
            let mut w = std::io::BufWriter::new(std::io::stdout().lock());
            // A reader that went away ends the process by SIGPIPE at this write (see `main.rs`).
            let _ = write(&mut w).and_then(|_| w.flush());
            Ok(())
        }
    };
    match (done, out) {
        (Err(e), Some(path)) => fail(&format!("{}: {e}", path.display())),
        _ => ExitCode::SUCCESS,
    }
}

/// `diagwire summary BUNDLE`.
pub fn summary(bundle: &Path, format: Format, view: View, out: Option<PathBuf>) -> ExitCode {
    if format == Format::Tsv {
        let mut text = Vec::new();
        let mut problems = Problems::default();
        let mut on_problem = |p| problems.push(p);
        let result = match view {
            View::Reachability => {
                tsv::reachability(bundle, Limits::default(), &mut text, &mut on_problem)
            }
            View::Timeline => tsv::timeline(bundle, Limits::default(), &mut text, &mut on_problem),
        };
        if let Err(e) = result {
            return fail(&e.to_string());
        }
        let written = emit(out.as_deref(), &String::from_utf8_lossy(&text));
        return problems.exit(bundle, written);
    }
    let mut bar: Option<indicatif::ProgressBar> = None;
    let mut tick = |done: usize, all: usize| {
        if done == 1 {
            bar = progress_bar(all);
        }
        if let Some(b) = &bar {
            b.set_position(done as u64);
        }
    };
    let verdict = crate::validate::bundle_verdict();
    let walk = crate::validate::walk(&verdict);
    let summary = match summarize_walk(bundle, Limits::default(), walk, &mut tick) {
        Ok(s) => s,
        Err(e) => return fail(&e.to_string()),
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let found = summary.problem_total();
    let written = match format {
        Format::Md => emit(out.as_deref(), &render::markdown(&summary)),
        // Written as it is made: the JSON of a long run is large.
        Format::Json => emit_with(out.as_deref(), &mut |w| render::write_json(&summary, w)),
        Format::Html => emit_with(out.as_deref(), &mut |w| html::write_page(&summary, w)),
        Format::Tsv => unreachable!("OK because TSV returned above"),
    };
    if found > 0 && written == ExitCode::SUCCESS {
        eprintln!(
            "diagwire summary: {found} problem(s) reading {}; the summary lists them under Validation",
            render::clean(&bundle.display().to_string())
        );
        return ExitCode::from(1);
    }
    written
}

/// The problems a TSV view met: the first few said on standard error, all counted.
#[derive(Default)]
struct Problems {
    shown: Vec<diagwire::Problem>,
    count: usize,
}

impl Problems {
    const SHOWN: usize = 20;

    fn push(&mut self, p: diagwire::Problem) {
        self.count += 1;
        if self.shown.len() < Self::SHOWN {
            self.shown.push(p);
        }
    }

    /// Says the problems on standard error; exit status 1 when there were any (the rows are
    /// those of the records that could be read), else `written`.
    fn exit(self, bundle: &Path, written: ExitCode) -> ExitCode {
        if self.count == 0 || written != ExitCode::SUCCESS {
            return written;
        }
        for p in &self.shown {
            eprintln!("{}", diagwire::problem::printable(&p.to_string()));
        }
        eprintln!(
            "diagwire summary: {} problem(s) reading {}; the rows are those of the records that could be read",
            self.count,
            render::clean(&bundle.display().to_string())
        );
        ExitCode::from(1)
    }
}

/// `diagwire compare A B`.
pub fn compare(a: &Path, b: &Path) -> ExitCode {
    let (va, vb) = (
        crate::validate::bundle_verdict(),
        crate::validate::bundle_verdict(),
    );
    let (wa, wb) = (crate::validate::walk(&va), crate::validate::walk(&vb));
    let (sa, sb) = match (
        summarize_walk(a, Limits::default(), wa, &mut |_, _| {}),
        summarize_walk(b, Limits::default(), wb, &mut |_, _| {}),
    ) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) | (_, Err(e)) => return fail(&e.to_string()),
    };
    let text = compare::markdown(&sa, &sb);
    let written = emit(None, &text);
    if written == ExitCode::SUCCESS && compare::differs(&text) {
        return ExitCode::from(1);
    }
    written
}
