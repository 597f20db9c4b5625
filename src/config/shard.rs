//! Shards: one run driven from several hosts by an existing job runner (a Kubernetes
//! Indexed Job, an ssh loop, any batch launcher). A shard takes its share of the count, the
//! rate and the tasks, keeps its correlation ids apart, can wait for a common start, and
//! records what `oemputx merge` needs to refuse an incomplete or mixed set: the run id, its
//! index of N and a hash of the settings every shard must share.
//!
//! The index comes from `--shard I/N`, or with `--shards N|auto` from the launcher: a
//! Kubernetes Indexed Job's `JOB_COMPLETION_INDEX`, Slurm's `SLURM_PROCID` in an `srun`
//! step or `SLURM_ARRAY_TASK_ID` in an array job (with N and a default run id from the job).
//!
//! Conventions followed: k6-operator's `--execution-segment i/N` (a share of the load per
//! runner), Kubernetes' `JOB_COMPLETION_INDEX` (0-based, a replaced pod keeps its index),
//! Trogdor's absolute start time; HdrHistograms merged losslessly as OMB does.

use super::{ConfigError, bad};
use chrono::{DateTime, Utc};

/// The environment variable a Kubernetes Indexed Job sets in each pod.
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// The shard options as asked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShardOptions {
    /// `I/N`: shard I (0-based) of N.
    pub shard: Option<String>,
    /// N (or `auto`: N from Slurm), with I from `JOB_COMPLETION_INDEX`, `SLURM_PROCID` or
    /// `SLURM_ARRAY_TASK_ID`.
    pub shards: Option<String>,
    pub run_id: Option<String>,
    /// RFC 3339, or `+DURATION` from now.
    pub start_at: Option<String>,
    /// This shard's groups are the run's measurement of the shared processes.
    pub measure: bool,
}

/// A shard's place in the run and what it was given of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardPlan {
    pub run_id: String,
    pub index: usize,
    pub of: usize,
    pub measure: bool,
    /// A hash of the settings every shard of the run must share.
    pub settings_hash: String,
    /// The node the launcher ran it on (Slurm's `SLURMD_NODENAME`), when it says.
    pub node: Option<String>,
}

/// Where a shard's index (and perhaps N and the run id) came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    pub index: usize,
    pub of: usize,
    /// The run id the launcher implies (Slurm's job), when --run-id is not given.
    pub run_id: Option<String>,
    /// The node the launcher names (`SLURMD_NODENAME`), else none.
    pub node: Option<String>,
}

/// What the launcher told this process, read from its environment by [`launcher`].
#[derive(Debug, Clone, PartialEq)]
enum Launcher {
    /// No launcher's variables.
    None,
    /// A Kubernetes Indexed Job's pod: the index, never N.
    Kubernetes { index: usize },
    /// One task of an `srun` step of N tasks (which start together).
    SlurmStep {
        index: usize,
        of: usize,
        run_id: String,
    },
    /// One task of a Slurm array job (`sbatch --array=0-3`).
    SlurmArray {
        index: usize,
        of: usize,
        run_id: String,
    },
    /// A Slurm batch script itself, outside any step or array: no shard's place.
    SlurmBatch,
}

/// A variable that must be a count or an index.
fn number(env: &dyn Fn(&str) -> Option<String>, var: &str) -> Result<Option<usize>, ConfigError> {
    env(var)
        .map(|raw| {
            raw.trim().parse::<usize>().map_err(|_| {
                bad("--shards", format!("{var}={raw:?} is not a whole number (0, 1, …): it comes from the job runner; unset it, or give --shard I/N"))
            })
        })
        .transpose()
}

/// The launcher's variables, checked against each other: Kubernetes' `JOB_COMPLETION_INDEX`;
/// Slurm's `SLURM_PROCID` of `SLURM_STEP_NUM_TASKS` (or `SLURM_NTASKS`) inside an `srun`
/// step of more than one task; else `SLURM_ARRAY_TASK_ID` within `SLURM_ARRAY_TASK_MIN`,
/// `_STEP` and `_COUNT` of an array job. A step of one task inside an array job is the
/// array's shard (the array's tasks are the shards, each launched with srun of one task).
fn launcher(env: &dyn Fn(&str) -> Option<String>) -> Result<Launcher, ConfigError> {
    let k8s = number(env, INDEX_ENV)?;
    let slurm_job = env("SLURM_JOB_ID");
    if let Some(index) = k8s {
        if slurm_job.is_some() {
            return Err(bad(
                "--shards",
                format!(
                    "both {INDEX_ENV} (a Kubernetes Indexed Job) and SLURM_JOB_ID (a Slurm job) are set, so the shard's index is ambiguous: unset the one that did not launch this process, or give --shard I/N"
                ),
            ));
        }
        return Ok(Launcher::Kubernetes { index });
    }
    let Some(job) = slurm_job else {
        return Ok(Launcher::None);
    };
    let step_tasks = match number(env, "SLURM_STEP_NUM_TASKS")? {
        Some(n) => Some(n),
        None if env("SLURM_STEP_ID").is_some() => number(env, "SLURM_NTASKS")?,
        None => None,
    };
    let array_id = number(env, "SLURM_ARRAY_TASK_ID")?;
    if let Some(of) = step_tasks.filter(|n| *n > 1 || array_id.is_none()) {
        let index = number(env, "SLURM_PROCID")?.ok_or_else(|| {
            bad("--shards", "SLURM_PROCID is not set inside an srun step (SLURM_STEP_NUM_TASKS is): run the shards with srun, which sets both")
        })?;
        if index >= of {
            return Err(bad(
                "--shards",
                format!(
                    "SLURM_PROCID={index} is not below the step's {of} task(s) (SLURM_STEP_NUM_TASKS/SLURM_NTASKS): the variables do not come from one srun step; run the shards with srun, or give --shard I/N"
                ),
            ));
        }
        let step = env("SLURM_STEP_ID").unwrap_or_default();
        let run_id = if step.is_empty() {
            format!("slurm-{}", job.trim())
        } else {
            format!("slurm-{}.{}", job.trim(), step.trim())
        };
        return Ok(Launcher::SlurmStep { index, of, run_id });
    }
    let Some(id) = array_id else {
        return Ok(Launcher::SlurmBatch);
    };
    let count = number(env, "SLURM_ARRAY_TASK_COUNT")?.ok_or_else(|| {
        bad("--shards", "SLURM_ARRAY_TASK_ID is set without SLURM_ARRAY_TASK_COUNT: Slurm sets both in an array job's tasks; give --shard I/N elsewhere")
    })?;
    let min = number(env, "SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
    let step = number(env, "SLURM_ARRAY_TASK_STEP")?.unwrap_or(1).max(1);
    let index = id
        .checked_sub(min)
        .filter(|d| d % step == 0)
        .map(|d| d / step)
        .filter(|i| *i < count)
        .ok_or_else(|| {
            bad("--shards", format!("SLURM_ARRAY_TASK_ID={id} is not one of the {count} evenly spaced ids from SLURM_ARRAY_TASK_MIN={min} (step {step}): give the array as a range, --array=0-{}", count.saturating_sub(1)))
        })?;
    let array_job = env("SLURM_ARRAY_JOB_ID").unwrap_or(job);
    Ok(Launcher::SlurmArray {
        index,
        of: count,
        run_id: format!("slurm-{}", array_job.trim()),
    })
}

/// `I/N`, or N (a number or `auto`) with I from the launcher's environment (`env` looks a
/// variable up); `None` when not sharded.
pub(crate) fn index_of(
    o: &ShardOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Placement>, ConfigError> {
    let (i, n, run_id) = match (&o.shard, &o.shards) {
        (Some(_), Some(_)) => {
            return Err(bad(
                "--shard",
                "give --shard I/N, or --shards N with I from the job runner (JOB_COMPLETION_INDEX, SLURM_PROCID, SLURM_ARRAY_TASK_ID), not both",
            ));
        }
        (None, None) => return Ok(None),
        (Some(s), None) => {
            let (i, n) = s
                .split_once('/')
                .and_then(|(i, n)| Some((i.trim().parse::<usize>().ok()?, n.trim().parse::<usize>().ok()?)))
                .ok_or_else(|| bad("--shard", format!("'{s}' is not I/N: write e.g. --shard 0/4 for the first of four shards (0-based, as JOB_COMPLETION_INDEX)")))?;
            (i, n, None)
        }
        (None, Some(asked)) => from_launcher(asked, launcher(env)?)?,
    };
    if n == 0 || n > 10_000 {
        return Err(bad("--shard", format!("{n} shards: give 1 to 10000")));
    }
    let node = node(env)?;
    if i >= n {
        return Err(bad(
            "--shard",
            format!("shard {i} of {n}: the index runs from 0 to {}", n - 1),
        ));
    }
    Ok(Some(Placement {
        index: i,
        of: n,
        run_id,
        node,
    }))
}

/// The node Slurm names (`SLURMD_NODENAME`), when it names one. The name goes into the
/// shard's report, which `merge` reads on another host and prints line by line: one that
/// is not a host name is refused here, as merge refuses it there.
fn node(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<String>, ConfigError> {
    let Some(raw) = env("SLURMD_NODENAME").filter(|n| !n.trim().is_empty()) else {
        return Ok(None);
    };
    let name = raw.trim();
    if crate::accounting::selector::plain_host_name(name) {
        Ok(Some(name.to_string()))
    } else {
        Err(bad(
            "--shard",
            format!(
                "SLURMD_NODENAME={raw:?} is not a node's name (1 to 253 letters, digits, '-', '.' or '_'), and it would be in the shard's report: unset it, or name the node as its host"
            ),
        ))
    }
}

/// `--shards N|auto` against what the launcher said: its index, and its N unless given.
fn from_launcher(asked: &str, l: Launcher) -> Result<(usize, usize, Option<String>), ConfigError> {
    let asked_n = match asked.trim() {
        "auto" => None,
        raw => Some(raw.parse::<usize>().map_err(|_| {
            bad("--shards", format!("'{raw}' is not a number of shards: give N (e.g. --shards 4), or auto to take it from Slurm"))
        })?),
    };
    let (index, launcher_n, run_id, from) = match l {
        Launcher::None => {
            return Err(bad(
                "--shards",
                format!(
                    "no job runner's index is set ({INDEX_ENV} in a Kubernetes Indexed Job, SLURM_PROCID in an srun step, SLURM_ARRAY_TASK_ID in a Slurm array job): run it under one, or give --shard I/N"
                ),
            ));
        }
        Launcher::SlurmBatch => {
            return Err(bad(
                "--shards",
                "this is a Slurm batch script outside any srun step or array (SLURM_PROCID is the batch script's 0): start the shards with srun (srun oemputx … --shards auto), or submit an array job",
            ));
        }
        Launcher::Kubernetes { index } => (index, None, None, INDEX_ENV),
        Launcher::SlurmStep { index, of, run_id } => (
            index,
            Some(of),
            Some(run_id),
            "SLURM_STEP_NUM_TASKS (the srun step's tasks)",
        ),
        Launcher::SlurmArray { index, of, run_id } => (
            index,
            Some(of),
            Some(run_id),
            "SLURM_ARRAY_TASK_COUNT (the array's tasks)",
        ),
    };
    let n = match (asked_n, launcher_n) {
        (Some(a), Some(l)) if a != l => {
            return Err(bad(
                "--shards",
                format!(
                    "--shards {a} but {from} says {l}: every task of the job is a shard, so give --shards {l} or --shards auto (or change the job's task count)"
                ),
            ));
        }
        (Some(a), _) => a,
        (None, Some(l)) => l,
        (None, None) => {
            return Err(bad(
                "--shards",
                format!(
                    "--shards auto: a Kubernetes Job gives its pods only their index ({INDEX_ENV}), not the number of completions: give --shards N"
                ),
            ));
        }
    };
    Ok((index, n, run_id))
}

/// Shard `i`'s share of `total` among `n`: the first `total % n` shards take one more.
pub fn share(total: u64, i: usize, n: usize) -> u64 {
    let (n, i) = (n as u64, i as u64);
    total / n + u64::from(i < total % n)
}

/// The start instant: RFC 3339 (e.g. 2026-12-03T10:00:00Z), or `+DURATION` from `now`.
pub(crate) fn start_at(raw: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, ConfigError> {
    instant("--start-at", raw, now)
}

/// An instant `flag` gives: RFC 3339, or `+DURATION` from `now`.
pub fn instant(
    flag: &'static str,
    raw: &str,
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>, ConfigError> {
    if let Some(d) = raw.strip_prefix('+') {
        let d = humantime::parse_duration(d.trim()).map_err(|e| {
            bad(
                flag,
                format!(
                    "'{raw}': {e}; write +30s, or an RFC 3339 time such as 2026-12-03T10:00:00Z"
                ),
            )
        })?;
        let d = chrono::Duration::from_std(d)
            .ok()
            .filter(|d| *d <= chrono::Duration::days(1))
            .ok_or_else(|| bad(flag, format!("'{raw}' is more than a day away")))?;
        return Ok(now + d);
    }
    let at = DateTime::parse_from_rfc3339(raw.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| bad(flag, format!("'{raw}' is not an RFC 3339 time ({e}): write e.g. 2026-12-03T10:00:00Z, or +30s")))?;
    // As for +DURATION: an instant years away is a typo, and a wait for it would look hung.
    if at - now > chrono::Duration::days(1) {
        return Err(bad(
            flag,
            format!(
                "'{raw}' is more than a day away (it is now {}): check the date",
                now.to_rfc3339()
            ),
        ));
    }
    Ok(at)
}

/// A run id: what names a run in every shard's report; letters, digits, '-', '_', '.'.
pub(crate) fn check_run_id(id: &str) -> Result<(), ConfigError> {
    if (1..=64).contains(&id.len())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        Ok(())
    } else {
        Err(bad(
            "--run-id",
            format!(
                "{id:?}: 1 to 64 letters, digits, '-', '_' or '.' (it is in every shard's report and correlation ids)"
            ),
        ))
    }
}

/// FNV-1a (64 bits) of the settings every shard must share, as hex: a merge refuses shards
/// whose settings differ. Not cryptographic: it guards against mistakes, not attacks.
pub fn settings_hash(fields: &[(&str, String)]) -> String {
    use std::hash::Hasher;
    let mut h = fnv::FnvHasher::default();
    for (k, v) in fields {
        // Fed byte by byte as `key=value\0`: the same hash as before the crate was used,
        // so shards written by older builds still merge.
        h.write(k.as_bytes());
        h.write(b"=");
        h.write(v.as_bytes());
        h.write(&[0]);
    }
    format!("{:016x}", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(shard: Option<&str>, shards: Option<&str>) -> ShardOptions {
        ShardOptions {
            shard: shard.map(String::from),
            shards: shards.map(String::from),
            ..ShardOptions::default()
        }
    }

    /// `index_of` with only `vars` set.
    fn placed(
        o: &ShardOptions,
        vars: &[(&str, &str)],
    ) -> Result<Option<(usize, usize, Option<String>)>, String> {
        let env = |k: &str| {
            vars.iter()
                .find(|(v, _)| *v == k)
                .map(|(_, x)| x.to_string())
        };
        index_of(o, &env)
            .map(|p| p.map(|p| (p.index, p.of, p.run_id)))
            .map_err(|e| e.to_string())
    }

    const K8S: &str = "JOB_COMPLETION_INDEX";

    #[test]
    fn an_index_comes_from_the_flag_or_the_job_and_must_be_in_range() {
        assert_eq!(
            placed(&opts(Some("2/4"), None), &[]),
            Ok(Some((2, 4, None)))
        );
        assert_eq!(
            placed(&opts(None, Some("4")), &[(K8S, "3")]),
            Ok(Some((3, 4, None)))
        );
        assert_eq!(placed(&opts(None, None), &[(K8S, "3")]), Ok(None));
        for (o, env) in [
            (opts(Some("4/4"), None), vec![]),
            (opts(Some("x"), None), vec![]),
            (opts(Some("0/0"), None), vec![]),
            (opts(None, Some("4")), vec![]),
            (opts(None, Some("4")), vec![(K8S, "four")]),
            (opts(Some("0/2"), Some("2")), vec![(K8S, "0")]),
            (opts(None, Some("auto")), vec![(K8S, "0")]),
            (opts(None, Some("many")), vec![(K8S, "0")]),
        ] {
            assert!(placed(&o, &env).is_err(), "{o:?} {env:?}");
        }
    }

    /// An srun step of 4 tasks inside job 812 (as srun sets them; SLURM_NTASKS too).
    fn step(procid: &str) -> Vec<(&'static str, String)> {
        [
            ("SLURM_JOB_ID", "812"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_STEP_NUM_TASKS", "4"),
            ("SLURM_NTASKS", "4"),
            ("SLURMD_NODENAME", "s2"),
        ]
        .into_iter()
        .map(|(k, v)| (k, v.to_string()))
        .chain([("SLURM_PROCID", procid.to_string())])
        .collect()
    }

    fn refs<'a>(v: &'a [(&'a str, String)]) -> Vec<(&'a str, &'a str)> {
        v.iter().map(|(k, x)| (*k, x.as_str())).collect()
    }

    #[test]
    fn slurm_steps_give_the_rank_the_count_and_the_run_id() {
        let s = step("3");
        assert_eq!(
            placed(&opts(None, Some("auto")), &refs(&s)),
            Ok(Some((3, 4, Some("slurm-812.0".into()))))
        );
        assert_eq!(
            placed(&opts(None, Some("4")), &refs(&s)),
            Ok(Some((3, 4, Some("slurm-812.0".into()))))
        );
        let env = |k: &str| s.iter().find(|(v, _)| *v == k).map(|(_, x)| x.clone());
        let p = index_of(&opts(None, Some("auto")), &env).ok().flatten();
        assert_eq!(p.and_then(|p| p.node).as_deref(), Some("s2"));
        // A step inside an array of repetitions: the step's rank wins over the array's id.
        let mut a = step("1");
        a.extend([
            ("SLURM_ARRAY_TASK_ID", "7".to_string()),
            ("SLURM_ARRAY_TASK_COUNT", "3".to_string()),
        ]);
        assert_eq!(
            placed(&opts(None, Some("auto")), &refs(&a)),
            Ok(Some((1, 4, Some("slurm-812.0".into()))))
        );
    }

    #[test]
    fn slurm_arrays_give_the_task_s_place_among_the_array_s() {
        let arr = [
            ("SLURM_JOB_ID", "905"),
            ("SLURM_ARRAY_JOB_ID", "900"),
            ("SLURM_ARRAY_TASK_ID", "12"),
            ("SLURM_ARRAY_TASK_MIN", "10"),
            ("SLURM_ARRAY_TASK_STEP", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("SLURM_PROCID", "0"),
        ];
        assert_eq!(
            placed(&opts(None, Some("auto")), &arr),
            Ok(Some((2, 4, Some("slurm-900".into()))))
        );
        // Launched by srun of one task inside the array's task: still the array's shard.
        let mut one = arr.to_vec();
        one.extend([("SLURM_STEP_ID", "0"), ("SLURM_STEP_NUM_TASKS", "1")]);
        assert_eq!(
            placed(&opts(None, Some("auto")), &one),
            Ok(Some((2, 4, Some("slurm-900".into()))))
        );
        // Ids 0, 2, 4, 6 (--array=0-6:2) are shards 0..3.
        let stepped = [
            ("SLURM_JOB_ID", "1"),
            ("SLURM_ARRAY_TASK_ID", "6"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_STEP", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ];
        assert_eq!(
            placed(&opts(None, Some("auto")), &stepped),
            Ok(Some((3, 4, Some("slurm-1".into()))))
        );
    }

    #[test]
    fn inconsistent_launcher_variables_are_refused_naming_the_variable_and_the_fix() {
        let mut both = step("0");
        both.push((K8S, "0".to_string()));
        let wrong_rank = step("4");
        let first = step("0");
        let batch = [
            ("SLURM_JOB_ID", "9"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
        ];
        let sparse = [
            ("SLURM_JOB_ID", "9"),
            ("SLURM_ARRAY_TASK_ID", "7"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ];
        let no_count = [("SLURM_JOB_ID", "9"), ("SLURM_ARRAY_TASK_ID", "0")];
        let bad_number = [
            ("SLURM_JOB_ID", "9"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_STEP_NUM_TASKS", "two"),
            ("SLURM_PROCID", "0"),
        ];
        type Case<'a> = (ShardOptions, Vec<(&'a str, &'a str)>, &'a str);
        let cases: Vec<Case> = vec![
            (opts(None, Some("auto")), refs(&both), "SLURM_JOB_ID"),
            (
                opts(None, Some("auto")),
                refs(&wrong_rank),
                "SLURM_PROCID=4",
            ),
            (
                opts(None, Some("8")),
                refs(&first),
                "--shards 8 but SLURM_STEP_NUM_TASKS",
            ),
            (opts(None, Some("auto")), batch.to_vec(), "srun"),
            (opts(None, Some("auto")), sparse.to_vec(), "--array=0-2"),
            (
                opts(None, Some("auto")),
                no_count.to_vec(),
                "SLURM_ARRAY_TASK_COUNT",
            ),
            (
                opts(None, Some("auto")),
                bad_number.to_vec(),
                "SLURM_STEP_NUM_TASKS=\"two\"",
            ),
            (
                opts(None, Some("auto")),
                vec![],
                "SLURM_PROCID in an srun step",
            ),
        ];
        for (o, env, says) in cases {
            let err = placed(&o, &env).expect_err("refused");
            assert!(err.contains(says), "{env:?}: {err}");
        }
    }

    #[test]
    fn shares_add_up_to_the_whole() {
        for (total, n) in [(10u64, 3usize), (3, 5), (1000, 7), (0, 2)] {
            let sum: u64 = (0..n).map(|i| share(total, i, n)).sum();
            assert_eq!(sum, total);
        }
        assert_eq!(
            [share(10, 0, 3), share(10, 1, 3), share(10, 2, 3)],
            [4, 3, 3]
        );
    }

    #[test]
    fn a_start_is_absolute_or_from_now_and_never_far() {
        let now = DateTime::parse_from_rfc3339("2026-12-03T10:00:00Z")
            .expect("t")
            .with_timezone(&Utc);
        assert_eq!(
            start_at("+30s", now).expect("rel"),
            now + chrono::Duration::seconds(30)
        );
        assert_eq!(
            start_at("2026-12-03T10:05:00Z", now).expect("abs"),
            now + chrono::Duration::minutes(5)
        );
        assert!(start_at("+3days", now).is_err());
        assert!(start_at("soon", now).is_err());
    }

    #[test]
    fn an_instant_more_than_a_day_ahead_is_refused_as_a_typo() {
        let now = DateTime::parse_from_rfc3339("2026-12-04T10:00:00Z")
            .expect("time")
            .with_timezone(&Utc);
        assert!(start_at("9999-12-31T00:00:00Z", now).is_err());
        assert!(start_at("2026-12-06T10:00:00Z", now).is_err());
        assert!(start_at("2026-12-04T10:05:00Z", now).is_ok());
        assert!(start_at("+2d", now).is_err());
    }

    #[test]
    fn the_hash_changes_with_any_setting() {
        let a = settings_hash(&[("count", "1000".into()), ("tasks", "4".into())]);
        assert_eq!(
            a,
            settings_hash(&[("count", "1000".into()), ("tasks", "4".into())])
        );
        assert_ne!(
            a,
            settings_hash(&[("count", "1000".into()), ("tasks", "5".into())])
        );
        assert_eq!(a.len(), 16);
        // FNV-1a of "count=1000\0tasks=4\0", as every earlier build wrote it: shards of
        // older builds still merge.
        assert_eq!(a, "d95087181c34eefb");
        assert!(check_run_id("nightly-2026.12.03").is_ok() && check_run_id("a b").is_err());
    }
}
