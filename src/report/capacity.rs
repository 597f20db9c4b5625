//! Capacity: the arithmetic people do with a cost per message by hand. Per group, the CPU
//! cores 1,000 transactions a second need (µs/tran ÷ 1,000, also corrected by its host's
//! capture ratio where one applies); per host, the rate at which its measured groups would
//! fill its cores, and the busiest host's rate as the run's estimate.
//!
//! An estimate from one measured point: it holds at the rate it was measured at, and says
//! which; the cost per message moves with the rate (wake-ups, batching, contention), and
//! `oemputx ladder` measures it at each rate (`report::ladder::verdict::capacity`). The driver (DRIVER) is the load, not the
//! system under test, so it is left out of every host's sum.

use serde::Serialize;

/// The group that is oemputx's own cost.
const DRIVER: &str = "DRIVER";

/// One group's cores per 1,000 transactions a second.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct GroupCapacity {
    pub name: String,
    pub host: String,
    pub us_per_tran: f64,
    /// µs/tran × 1,000 tran/s ÷ 10^6 µs/s.
    pub cores_per_1000_tps: f64,
    /// The same with the group's CPU divided by its host's capture ratio (null without one).
    pub corrected_cores_per_1000_tps: Option<f64>,
    /// What a million messages cost in this group's CPU at `--price-per-vcpu-hour`
    /// (corrected where a ratio applies): µs/tran × price ÷ 3,600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_million: Option<f64>,
}

/// One host: its cores, what its measured groups cost per transaction, and the rate that
/// would keep all its cores busy.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct HostCapacity {
    pub name: String,
    pub cpus: usize,
    /// The measured groups on it (the driver left out), corrected where a ratio applies.
    pub us_per_tran: f64,
    /// cpus × 10^6 ÷ us_per_tran; null when the groups cost nothing measurable.
    pub full_at_tps: Option<f64>,
}

/// The run's capacity estimate.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Capacity {
    pub groups: Vec<GroupCapacity>,
    pub hosts: Vec<HostCapacity>,
    /// The host whose cores the groups fill first, and at what rate.
    pub busiest_host: Option<String>,
    pub full_at_tps: Option<f64>,
    /// The rate this run measured, for comparison.
    pub measured_tps: f64,
    /// What the estimate assumes.
    pub assumption: std::borrow::Cow<'static, str>,
    /// The host's state over the run (quiet, busy, contended): an estimate from a contended
    /// run carries the other work's effect on the cost per message.
    #[serde(default)]
    pub host_state: Option<crate::accounting::host_load::HostState>,
    /// What one vCPU-hour costs (`--price-per-vcpu-hour`), when given: the groups then
    /// have their cost per million messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_per_vcpu_hour: Option<f64>,
}

/// µs of CPU per message → the cost of a million messages at `price` per vCPU-hour: a
/// million messages take us × 10^6 µs = us ÷ 3,600 vCPU-hours.
pub fn cost_per_million(us_per_tran: f64, price_per_vcpu_hour: f64) -> f64 {
    us_per_tran * price_per_vcpu_hour / 3600.0
}

impl Capacity {
    /// The estimate with each group's cost per million messages at `price` per vCPU-hour
    /// (nothing changes without a price).
    pub fn priced(mut self, price: Option<f64>) -> Self {
        let Some(price) = price else { return self };
        self.price_per_vcpu_hour = Some(price);
        for g in &mut self.groups {
            // The corrected cores are the group's µs/tran × its host's correction ÷ 1,000.
            let us = g
                .corrected_cores_per_1000_tps
                .map_or(g.us_per_tran, |c| c * 1000.0);
            g.cost_per_million = Some(cost_per_million(us, price));
        }
        self
    }

    /// The estimate marked with the host's state; on a busy or contended host the assumption
    /// says what the other work did to the figures it rests on.
    pub fn on_host(mut self, load: Option<&crate::accounting::host_load::HostLoad>) -> Self {
        use crate::accounting::host_load::HostState;
        let Some(h) = load else { return self };
        self.host_state = Some(h.state);
        if h.state != HostState::Quiet {
            self.assumption = format!(
                "{}; measured on a {} host: other work kept {:.2} of its {} CPUs busy ({:.0} % of the machine was not the run's to have), so the cost per message it rests on may be higher than on a quiet host",
                self.assumption,
                h.state.word(),
                h.other_cpus + h.steal_cpus,
                h.cpus,
                100.0 * h.squeeze_share
            )
            .into();
        }
        self
    }
}

/// A group's figures as the estimate needs them.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupCost {
    pub name: String,
    pub host: String,
    pub us_per_tran: f64,
}

/// A host's cores and its capture ratio (corrected ÷ captured), where known.
#[derive(Debug, Clone, PartialEq)]
pub struct HostFacts {
    pub name: String,
    pub cpus: usize,
    pub correction: Option<f64>,
}

/// What the estimate assumes, with the rate it was measured at (`paced`: under --rate).
pub fn assumption(measured_tps: f64, paced: bool) -> String {
    format!(
        "an estimate from this run's one rate ({measured_tps:.0} msg/s, {}): it holds at that rate, for each message costs more or less at others (wake-ups, batching, contention: 2.7× between 100 msg/s and unpaced on the reference flow); oemputx ladder measures the cost at each rate and the highest rate that holds",
        if paced { "paced by --rate" } else { "unpaced" }
    )
}

/// The estimate from the groups' costs and the hosts' cores; `None` without groups.
/// `paced`: the run was paced by --rate.
pub fn estimate(
    groups: &[GroupCost],
    hosts: &[HostFacts],
    (measured_tps, paced): (f64, bool),
) -> Option<Capacity> {
    let measured: Vec<&GroupCost> = groups.iter().filter(|g| g.name != DRIVER).collect();
    if measured.is_empty() {
        return None;
    }
    let correction = |host: &str| {
        hosts
            .iter()
            .find(|h| h.name == host)
            .and_then(|h| h.correction)
    };
    let per_1000 = |us: f64| us / 1000.0;
    let group_rows: Vec<GroupCapacity> = groups
        .iter()
        .map(|g| GroupCapacity {
            name: g.name.clone(),
            host: g.host.clone(),
            us_per_tran: g.us_per_tran,
            cores_per_1000_tps: per_1000(g.us_per_tran),
            corrected_cores_per_1000_tps: correction(&g.host).map(|c| per_1000(g.us_per_tran * c)),
            cost_per_million: None,
        })
        .collect();
    let host_rows: Vec<HostCapacity> = hosts
        .iter()
        .filter(|h| measured.iter().any(|g| g.host == h.name))
        .map(|h| {
            let c = h.correction.unwrap_or(1.0);
            let us: f64 = measured
                .iter()
                .filter(|g| g.host == h.name)
                .map(|g| g.us_per_tran * c)
                .sum();
            HostCapacity {
                name: h.name.clone(),
                cpus: h.cpus,
                us_per_tran: us,
                full_at_tps: (us > 0.0).then(|| h.cpus as f64 * 1e6 / us),
            }
        })
        .collect();
    let busiest = host_rows
        .iter()
        .filter(|h| h.full_at_tps.is_some())
        .min_by(|a, b| {
            a.full_at_tps
                .partial_cmp(&b.full_at_tps)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    Some(Capacity {
        busiest_host: busiest.map(|h| h.name.clone()),
        full_at_tps: busiest.and_then(|h| h.full_at_tps),
        groups: group_rows,
        hosts: host_rows,
        measured_tps,
        assumption: assumption(measured_tps, paced).into(),
        host_state: None,
        price_per_vcpu_hour: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(name: &str, host: &str, us: f64) -> GroupCost {
        GroupCost {
            name: name.into(),
            host: host.into(),
            us_per_tran: us,
        }
    }

    #[test]
    fn a_price_gives_each_group_its_cost_per_million_messages_by_hand() {
        // 36 µs a message at 0.05 a vCPU-hour: 10^6 × 36 µs = 36 s = 0.01 vCPU-hour, so a
        // million messages cost 0.0005; corrected by 1.25 where a ratio applies.
        let groups = [g("QMGR", "local", 36.0), g("DB", "db", 72.0)];
        let hosts = [
            HostFacts {
                name: "local".into(),
                cpus: 2,
                correction: Some(1.25),
            },
            HostFacts {
                name: "db".into(),
                cpus: 2,
                correction: None,
            },
        ];
        let c = estimate(&groups, &hosts, (100.0, false))
            .expect("an estimate")
            .priced(Some(0.05));
        assert_eq!(c.price_per_vcpu_hour, Some(0.05));
        let cost = |name: &str| {
            c.groups
                .iter()
                .find(|x| x.name == name)
                .and_then(|x| x.cost_per_million)
                .expect(name)
        };
        assert!((cost("QMGR") - 36.0 * 1.25 * 0.05 / 3600.0).abs() < 1e-15);
        assert!((cost("DB") - 72.0 * 0.05 / 3600.0).abs() < 1e-15);
        let unpriced = estimate(&groups, &hosts, (100.0, false))
            .expect("an estimate")
            .priced(None);
        assert!(unpriced.groups.iter().all(|x| x.cost_per_million.is_none()));
    }

    #[test]
    fn cores_per_1000_and_the_busiest_host_by_hand() {
        // Local: QMGR 200 + FLOW 120 µs/tran on 2 CPUs, ratio 0.8 (corrected ÷ captured 1.25);
        // db: DB 90 µs/tran on 4 CPUs, no ratio. The driver's 30 µs is not the system's.
        let groups = [
            g("QMGR", "local", 200.0),
            g("FLOW", "local", 120.0),
            g("DRIVER", "local", 30.0),
            g("DB", "db", 90.0),
        ];
        let hosts = [
            HostFacts {
                name: "local".into(),
                cpus: 2,
                correction: Some(1.25),
            },
            HostFacts {
                name: "db".into(),
                cpus: 4,
                correction: None,
            },
        ];
        let c = estimate(&groups, &hosts, (3000.0, false)).expect("an estimate");
        let qmgr = &c.groups[0];
        assert!((qmgr.cores_per_1000_tps - 0.2).abs() < 1e-12);
        assert_eq!(qmgr.corrected_cores_per_1000_tps, Some(0.25));
        let db = c.groups.iter().find(|x| x.name == "DB").expect("DB");
        assert_eq!(db.corrected_cores_per_1000_tps, None);
        // Local: (200 + 120) × 1.25 = 400 µs → 2 × 10^6 / 400 = 5,000/s; db: 4 × 10^6 / 90.
        let local = &c.hosts[0];
        assert!((local.us_per_tran - 400.0).abs() < 1e-9, "{local:?}");
        assert!((local.full_at_tps.expect("rate") - 5000.0).abs() < 1e-6);
        assert_eq!(c.busiest_host.as_deref(), Some("local"));
        assert!((c.full_at_tps.expect("rate") - 5000.0).abs() < 1e-6);
        assert!(estimate(&[g("DRIVER", "local", 30.0)], &hosts, (1.0, false)).is_none());
    }
}
