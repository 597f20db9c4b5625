//! `oemputx compare`: the broker paper's overhead table — each group's CPU µs per
//! transaction in each run, and the Total Overhead % of each run against the first (IBM's
//! WebSphere Message Broker for z/OS performance report measured the cost of accounting and
//! statistics this way).

use crate::config::tools::CompareOptions;
use crate::exit::Exit;
use crate::export::{self, cells};
use crate::report::saved::{ReportFileError, Saved, differences};
use std::path::Path;

/// `oemputx compare BASE.json OTHER.json…`.
pub fn compare(args: &CompareOptions) -> anyhow::Result<Exit> {
    let runs: Vec<Saved> = args
        .reports
        .iter()
        .map(|p| Saved::load(p))
        .collect::<Result<_, _>>()?;
    let Some((base, others)) = runs.split_first() else {
        return Ok(Exit::Usage);
    };
    let diffs: Vec<String> = others
        .iter()
        .flat_map(|o| differences(base, o, false))
        .collect();
    if !diffs.is_empty() && !args.force {
        return Err(ReportFileError::Differs(diffs).into());
    }
    let rows = crate::export::compare::rows(&runs);
    let mut text =
        String::from("oemputx compare: CPU per transaction, each run against the first\n\n");
    text.push_str(&cells::text(&rows));
    if !diffs.is_empty() {
        text.push_str("\nCompared with --force although the runs differ:\n");
        text.push_str(&diffs.join("\n"));
        text.push('\n');
    }
    let write = |path: &Path, what: &str, body: &str| {
        export::write_output(path, &format!("the comparison {what}"), body)
    };
    let machine_on_stdout = [&args.export_tsv, &args.export_markdown]
        .iter()
        .any(|p| p.as_deref().is_some_and(|p| p.as_os_str() == "-"));
    if machine_on_stdout {
        eprint!("{text}");
    } else {
        crate::export::print_stdout(&text)?;
    }
    if let Some(p) = &args.export_tsv {
        write(p, "TSV", &cells::delimited(&rows, b'\t')?)?;
    }
    if let Some(p) = &args.export_markdown {
        write(p, "Markdown", &cells::markdown(&rows))?;
    }
    Ok(Exit::Ok)
}
