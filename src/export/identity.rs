//! What identifies a run on every row a spreadsheet gets (issue 47): two rows pasted from
//! two runs — of any command — can be told apart and judged by these columns alone, in
//! the same names everywhere (a run's own TSV has them among its columns; every other
//! command's rows end with them, in [`COLUMNS`] order): the run's settings (tasks, message size,
//! persistence, syncpoint, rounds, count or duration, warm-up, rate), the host's state,
//! and which oemputx measured which commit.

use super::cells::safe_cell;
use crate::report::Settings;

/// The identity columns, in order, after each command's own.
pub const COLUMNS: [&str; 18] = [
    "label",
    "transport",
    "tasks",
    "msg_bytes",
    "persistent",
    "syncpoint",
    "rounds",
    "count",
    "duration_s",
    "warmup",
    "rate_limit_tps",
    "other_cpu_us_per_tran",
    "captured_spread_pct",
    "host_state",
    "oemputx_version",
    "commit",
    "queue_type",
    "replicas",
];

/// A run's message size: one number, or the range of a message file's sizes.
pub fn msg_bytes(s: &Settings) -> String {
    if s.msg_bytes_min == s.msg_bytes_max {
        s.msg_bytes_max.to_string()
    } else {
        format!("{}-{}", s.msg_bytes_min, s.msg_bytes_max)
    }
}

/// One run's identity: a value per [`COLUMNS`] entry (empty where it has none).
#[derive(Debug, Clone, Default)]
pub struct Identity {
    pub label: String,
    pub transport: String,
    pub tasks: String,
    pub msg_bytes: String,
    pub persistent: String,
    pub syncpoint: String,
    pub rounds: String,
    pub count: String,
    pub duration_s: String,
    pub warmup: String,
    pub rate_limit_tps: String,
    /// CPU outside the groups, µs per message (empty where the command has none).
    pub other_cpu_us_per_tran: String,
    /// The captured total's spread across rounds, % (empty where there are no rounds).
    pub captured_spread_pct: String,
    pub host_state: String,
    pub commit: String,
    /// `--queue-type` (RabbitMQ), empty when not asked.
    pub queue_type: String,
    /// `--replicas` (NATS JetStream), empty when not asked.
    pub replicas: String,
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

impl Identity {
    /// A put/get run's settings (one round's, for sweep and a live compare).
    pub(crate) fn of_settings(s: &Settings) -> Identity {
        Identity {
            transport: s.transport.to_string(),
            tasks: s.tasks.to_string(),
            msg_bytes: msg_bytes(s),
            persistent: s.persistent.to_string(),
            syncpoint: s.syncpoint.to_string(),
            count: opt(s.count),
            duration_s: opt(s.duration_s),
            warmup: s.warmup.to_string(),
            rate_limit_tps: opt(s.rate_limit_tps),
            queue_type: opt(s.queue_type),
            replicas: opt(s.replicas),
            ..Identity::default()
        }
    }

    /// The values in [`COLUMNS`] order, text made safe for a spreadsheet.
    pub fn cells(&self) -> Vec<String> {
        [
            &self.label,
            &self.transport,
            &self.tasks,
            &self.msg_bytes,
            &self.persistent,
            &self.syncpoint,
            &self.rounds,
            &self.count,
            &self.duration_s,
            &self.warmup,
            &self.rate_limit_tps,
            &self.other_cpu_us_per_tran,
            &self.captured_spread_pct,
            &self.host_state,
            env!("CARGO_PKG_VERSION"),
            &self.commit,
            &self.queue_type,
            &self.replicas,
        ]
        .iter()
        .map(|c| safe_cell(c).into_owned())
        .collect()
    }
}

/// `rows` (a header first) with the identity columns added to each: `id(i)` is the
/// identity of body row `i`. A column the command already has keeps its own value (a
/// sweep's `tasks` is each point's), and is not added twice.
pub fn append(rows: &mut [Vec<String>], id: impl Fn(usize) -> Identity) {
    let Some((header, body)) = rows.split_first_mut() else {
        return;
    };
    let added: Vec<usize> = (0..COLUMNS.len())
        .filter(|&c| !header.iter().any(|h| h == COLUMNS[c]))
        .collect();
    header.extend(added.iter().map(|&c| COLUMNS[c].to_string()));
    for (i, row) in body.iter_mut().enumerate() {
        let cells = id(i).cells();
        row.extend(added.iter().map(|&c| cells[c].clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_identity_follows_a_command_s_own_columns_once_each() {
        let mut rows = vec![
            vec!["tasks".to_string(), "rate".to_string()],
            vec!["4".to_string(), "10".to_string()],
        ];
        append(&mut rows, |_| Identity {
            tasks: "1".into(),
            persistent: "true".into(),
            label: "=x".into(),
            ..Identity::default()
        });
        assert_eq!(rows[0].len(), 2 + COLUMNS.len() - 1);
        assert_eq!(rows[0].iter().filter(|h| *h == "tasks").count(), 1);
        let at = |name: &str| rows[0].iter().position(|h| h == name).expect(name);
        assert_eq!(rows[1][at("tasks")], "4", "the command's own value stays");
        assert_eq!(rows[1][at("persistent")], "true");
        assert_eq!(
            rows[1][at("label")],
            "'=x",
            "text is safe for a spreadsheet"
        );
        assert_eq!(rows[1][at("oemputx_version")], env!("CARGO_PKG_VERSION"));
    }
}
