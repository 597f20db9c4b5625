//! Who served the request queue, as a report holds it ([`crate::serving`] finds it out).

use serde::Serialize;

/// A local process and its connections to the broker.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Peer {
    pub pid: i32,
    pub name: String,
    /// Its owner, when not the user oemputx runs as.
    pub other_user: Option<String>,
    pub connections: usize,
}

/// Who served the request queue, as seen at the end of the run.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Serving {
    /// The broker's host and port the connections were matched against.
    pub broker: String,
    /// The request queue's consumers, by the broker's count (null where it does not tell).
    pub consumers: Option<u32>,
    /// FLOW's processes, each with its connections to the broker.
    pub flow: Vec<Peer>,
    /// Local processes outside FLOW (oemputx itself left out) connected to the broker.
    pub others: Vec<Peer>,
    /// Connections to the broker whose process could not be read, by owner (uid).
    pub unreadable_by_uid: std::collections::BTreeMap<u32, usize>,
}
