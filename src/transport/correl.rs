//! Correlation ids: `oemputx-RUN-TASK-SEQ`, unique per request and parseable back.
//!
//! The run id tells this run's replies from a previous run's; the task index lets a shared
//! reply queue hand each reply to the task that sent its request; the sequence number lets
//! the driver tell a late reply (its request timed out) from a duplicate.

/// The parts of one of our correlation ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Correl<'a> {
    pub run: &'a str,
    pub task: usize,
    pub seq: u64,
}

const PREFIX: &str = "oemputx-";

/// The id of request `seq` of task `task` in run `run`. Built by hand, not with
/// `format!`: it is made once per request, and beside NATS's 18 µs round trip the
/// formatting machinery was a measurable share of the driver's CPU.
pub fn make(run: &str, task: usize, seq: u64) -> String {
    let (mut t, mut s) = (itoa::Buffer::new(), itoa::Buffer::new());
    let (task, seq) = (t.format(task), s.format(seq));
    let mut id = String::with_capacity(PREFIX.len() + run.len() + task.len() + seq.len() + 2);
    for part in [PREFIX, run, "-", task, "-", seq] {
        id.push_str(part);
    }
    id
}

/// Parse an id made by [`make`]; anything else is `None`.
pub fn parse(id: &str) -> Option<Correl<'_>> {
    let rest = id.strip_prefix(PREFIX)?;
    let mut parts = rest.rsplitn(3, '-');
    let seq = parts.next()?.parse().ok()?;
    let task = parts.next()?.parse().ok()?;
    let run = parts.next()?;
    Some(Correl { run, task, seq })
}

/// A run id: 8 hex digits from the clock and the pid, distinct between runs.
pub(crate) fn new_run_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mixed = (nanos as u64) ^ ((std::process::id() as u64) << 32) ^ ((nanos >> 64) as u64);
    // Fold the 64 bits so that consecutive runs differ in the visible 32.
    format!("{:08x}", (mixed ^ (mixed >> 32)) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        let id = make("0badcafe", 7, 123456);
        assert_eq!(
            parse(&id),
            Some(Correl {
                run: "0badcafe",
                task: 7,
                seq: 123456
            })
        );
    }

    #[test]
    fn foreign_ids_do_not_parse() {
        assert_eq!(parse("abc"), None);
        assert_eq!(parse("oemputx-x-y-z"), None);
        assert_eq!(parse(""), None);
    }
}
