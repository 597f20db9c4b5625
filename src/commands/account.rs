//! `oemputx account`: wraps any other load driver (JMeter, PerfTest, a script) between two
//! snapshots of the groups (`crate::orchestrate::account`), then its report's files and
//! text, and an exit code that says how the command ended.

use crate::config::tools::AccountConfig;
use crate::exit::Exit;
use crate::export::outputs::{Outputs, Style};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// `oemputx account`.
pub fn account(args: &AccountConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    let a = crate::orchestrate::account::run(args, &interrupt)?;
    // The JSON file first (a full or closed stdout cannot lose it), then the text.
    let mut out = Outputs::new();
    out.artifact(&a.report, &args.exports, &Style::default());
    out.finish(Some(&crate::export::account::text(&a.report)))?;
    if a.interrupted {
        crate::say!(
            "oemputx account: interrupted; the signal was passed on to the command, and the figures cover its run up to then"
        );
        return Ok(Exit::Interrupted);
    }
    if !a.status.success() {
        crate::say!(
            "oemputx account: the command failed ({}); the figures cover its run anyway",
            a.status
        );
        return Ok(Exit::Failure);
    }
    Ok(Exit::Ok)
}
