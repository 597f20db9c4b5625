//! The sizes a saved report or history may have, checked by one pass over its text before
//! any of it is built: how many runs, rounds and groups it holds. A history of 131 million
//! tiny runs was parsed whole into memory (8.5 GB, or an abort under a memory limit) before
//! its 30-run bound was looked at; counted here, nothing of a run is kept, and a signal
//! ends the count (issue 61, classes a and b).

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::cell::Cell;

/// The most runs a history keeps (and the most oemputx reads from one).
pub const MAX_RUNS: usize = 30;
/// The most rounds a saved run may hold: the most a run makes (`--rounds`).
pub const MAX_ROUNDS: usize = crate::config::MAX_ROUNDS;
/// The most groups a saved run may hold: far more than any run accounts, and few enough
/// that the history's search over every group's figures ends in seconds.
pub const MAX_GROUPS: usize = 1000;

/// What was found past its bound: what, how many, the bound and why it is there.
type Over = (&'static str, usize, usize, &'static str);

/// How the count ended, besides a file within every bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Past a bound: what, how many, the bound and why it is there.
    Over(Over),
    /// A signal ended the count.
    Interrupted,
}

/// Check the sizes in `text`, the JSON of a saved report or of a history (`runs`, each a
/// report), against their bounds; `max_runs` is the history's. JSON that is not an object
/// passes: the typed read after this names what is wrong with it.
pub(crate) fn check(text: &str, max_runs: usize) -> Result<(), Stop> {
    let stop = Cell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    // A parse error is the typed read's to name; only a bound or a signal stops here.
    let _ = Shape {
        stop: &stop,
        max_runs,
        top: true,
    }
    .deserialize(&mut de);
    stop.get().map_or(Ok(()), Err)
}

/// The scalars a shape skips: the typed read after it names what is wrong with them.
macro_rules! skip_scalars {
    () => {
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
    };
}

/// A report (or, at the top, a history): its `runs`, `rounds` and `groups` counted, every
/// other field skipped unbuilt.
struct Shape<'a> {
    stop: &'a Cell<Option<Stop>>,
    max_runs: usize,
    top: bool,
}

impl<'de> DeserializeSeed<'de> for Shape<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Shape<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a report")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let bound = match key.as_ref() {
                "runs" if self.top => Some(("runs", self.max_runs, "the most a history keeps")),
                "rounds" => Some((
                    "rounds",
                    MAX_ROUNDS,
                    "the most rounds a run makes (--rounds)",
                )),
                "groups" => Some(("groups", MAX_GROUPS, "far more than a run accounts")),
                _ => None,
            };
            match bound {
                Some(bound) => map.next_value_seed(Count {
                    stop: self.stop,
                    bound,
                    runs: (key == "runs").then_some(self.max_runs),
                })?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            if self.stop.get().is_some() {
                return Err(serde::de::Error::custom("past a bound"));
            }
        }
        Ok(())
    }
    // Anything else is the typed read's to name.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
    skip_scalars!();
}

/// A list counted to its end (past its bound too, so that the refusal says how many it
/// holds), its elements skipped unbuilt, or checked as reports when they are a history's runs.
struct Count<'a> {
    stop: &'a Cell<Option<Stop>>,
    bound: (&'static str, usize, &'static str),
    /// Some(max runs): the elements are runs, each a report.
    runs: Option<usize>,
}

impl<'de> DeserializeSeed<'de> for Count<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Count<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let (what, max, why) = self.bound;
        let mut n = 0usize;
        loop {
            // A count of millions takes seconds: a signal ends it.
            if n.is_multiple_of(4096) && crate::signals::interrupted() {
                self.stop.set(Some(Stop::Interrupted));
                return Err(serde::de::Error::custom("interrupted"));
            }
            let more = match self.runs {
                Some(max_runs) if n < max => seq
                    .next_element_seed(Shape {
                        stop: self.stop,
                        max_runs,
                        top: false,
                    })?
                    .is_some(),
                _ => seq.next_element::<IgnoredAny>()?.is_some(),
            };
            if !more {
                break;
            }
            n += 1;
        }
        if n > max {
            self.stop.set(Some(Stop::Over((what, n, max, why))));
        }
        Ok(())
    }
    // Not a list: the typed read names it.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(())
    }
    skip_scalars!();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(text: &str) -> Result<(), String> {
        match check(text, 30) {
            Ok(()) => Ok(()),
            Err(Stop::Over((what, found, max, _))) => Err(format!("holds {found} {what} ({max}:")),
            Err(Stop::Interrupted) => Err("interrupted".into()),
        }
    }

    #[test]
    fn runs_rounds_and_groups_past_their_bounds_are_refused_counting_how_many() {
        assert!(checked(r#"{"schema":"x","runs":[{"rounds":[1,2]},{}]}"#).is_ok());
        let zeros = format!(r#"{{"runs":[{}0]}}"#, "0,".repeat(99_999));
        let e = checked(&zeros).expect_err("too many runs");
        assert!(e.contains("holds 100000 runs") && e.contains("(30:"), "{e}");
        let rounds = format!(r#"{{"rounds":[{}0]}}"#, "{},".repeat(MAX_ROUNDS));
        let e = checked(&rounds).expect_err("too many rounds");
        assert!(
            e.contains(&format!("holds {} rounds", MAX_ROUNDS + 1)),
            "{e}"
        );
        // A run inside a history is checked as a report.
        let groups = format!(
            r#"{{"runs":[{{}},{{"groups":[{}0]}}]}}"#,
            "1,".repeat(MAX_GROUPS)
        );
        let e = checked(&groups).expect_err("too many groups");
        assert!(
            e.contains(&format!("holds {} groups", MAX_GROUPS + 1)),
            "{e}"
        );
        // What is not a report passes here; the typed read names it.
        for other in ["[1,2]", "3", r#"{"runs":7}"#, "not json"] {
            assert!(checked(other).is_ok(), "{other}");
        }
    }
}
