//! Shards: one run driven from several hosts by an existing job runner (a Kubernetes
//! Indexed Job, an ssh loop, any batch launcher). A shard takes its share of the count, the
//! rate and the tasks, keeps its correlation ids apart, can wait for a common start, and
//! records what `oemputx merge` needs to refuse an incomplete or mixed set: the run id, its
//! index of N and a hash of the settings every shard must share.
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
    /// N, with I from `JOB_COMPLETION_INDEX`.
    pub shards: Option<usize>,
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
}

/// `I/N`, or N with I from the environment; `None` when not sharded.
pub fn index_of(
    o: &ShardOptions,
    env_index: Option<&str>,
) -> Result<Option<(usize, usize)>, ConfigError> {
    let parsed = match (&o.shard, o.shards) {
        (Some(_), Some(_)) => {
            return Err(bad(
                "--shard",
                "give --shard I/N, or --shards N with I in JOB_COMPLETION_INDEX, not both",
            ));
        }
        (None, None) => return Ok(None),
        (Some(s), None) => {
            let (i, n) = s
                .split_once('/')
                .and_then(|(i, n)| Some((i.trim().parse::<usize>().ok()?, n.trim().parse::<usize>().ok()?)))
                .ok_or_else(|| bad("--shard", format!("'{s}' is not I/N: write e.g. --shard 0/4 for the first of four shards (0-based, as JOB_COMPLETION_INDEX)")))?;
            (i, n)
        }
        (None, Some(n)) => {
            let raw = env_index.ok_or_else(|| {
                bad("--shards", format!("{INDEX_ENV} is not set: a Kubernetes Indexed Job sets it in each pod; elsewhere give --shard I/N"))
            })?;
            let i = raw.trim().parse::<usize>().map_err(|_| {
                bad(
                    "--shards",
                    format!("{INDEX_ENV}={raw:?} is not a shard index (0, 1, …)"),
                )
            })?;
            (i, n)
        }
    };
    let (i, n) = parsed;
    if n == 0 || n > 10_000 {
        return Err(bad("--shard", format!("{n} shards: give 1 to 10000")));
    }
    if i >= n {
        return Err(bad(
            "--shard",
            format!("shard {i} of {n}: the index runs from 0 to {}", n - 1),
        ));
    }
    Ok(Some((i, n)))
}

/// Shard `i`'s share of `total` among `n`: the first `total % n` shards take one more.
pub fn share(total: u64, i: usize, n: usize) -> u64 {
    let (n, i) = (n as u64, i as u64);
    total / n + u64::from(i < total % n)
}

/// The start instant: RFC 3339 (e.g. 2026-12-03T10:00:00Z), or `+DURATION` from `now`.
pub fn start_at(raw: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, ConfigError> {
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
pub fn check_run_id(id: &str) -> Result<(), ConfigError> {
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

    fn opts(shard: Option<&str>, shards: Option<usize>) -> ShardOptions {
        ShardOptions {
            shard: shard.map(String::from),
            shards,
            ..ShardOptions::default()
        }
    }

    #[test]
    fn an_index_comes_from_the_flag_or_the_job_and_must_be_in_range() {
        assert_eq!(
            index_of(&opts(Some("2/4"), None), None).ok(),
            Some(Some((2, 4)))
        );
        assert_eq!(
            index_of(&opts(None, Some(4)), Some("3")).ok(),
            Some(Some((3, 4)))
        );
        assert_eq!(index_of(&opts(None, None), Some("3")).ok(), Some(None));
        for (o, env) in [
            (opts(Some("4/4"), None), None),
            (opts(Some("x"), None), None),
            (opts(Some("0/0"), None), None),
            (opts(None, Some(4)), None),
            (opts(None, Some(4)), Some("four")),
            (opts(Some("0/2"), Some(2)), Some("0")),
        ] {
            assert!(index_of(&o, env).is_err(), "{o:?} {env:?}");
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
