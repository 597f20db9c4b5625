//! What `merge` holds in memory while it reads a shard: the file's bytes once and the typed
//! report, never a `serde_json::Value` of the whole file (which held about 17 times the
//! files' size). Measured with a counting allocator, so this file holds one test: the
//! allocator counts every thread of the test binary.

use oemputx_test_support::*;
use serde_json::Value;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator as it came; the counters are atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn a_large_shard_is_read_typed_in_one_pass_in_a_small_multiple_of_its_size() {
    let dir = tempfile::tempdir().expect("tempdir");
    let small = dir.path().join("small.json");
    let at = (chrono::Utc::now() + chrono::Duration::seconds(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let out = oemputx()
        .args(["--shard", "0/1", "--run-id", "memory", "--start-at", &at])
        .args(["--count", "200", "--quiet", "--no-save", "--export-json"])
        .arg(&small)
        .output()
        .expect("the shard runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The shard made large: 100,000 process rows (about 30 MB of JSON).
    let large = dir.path().join("large.json");
    {
        let mut j: Value =
            serde_json::from_str(&std::fs::read_to_string(&small).expect("read")).expect("json");
        let row = j["processes"][0].clone();
        assert!(row.is_object(), "the shard has a process row: {j}");
        j["processes"] = Value::Array(vec![row; 100_000]);
        std::fs::write(&large, j.to_string()).expect("write");
    }
    let size = std::fs::metadata(&large).expect("size").len() as usize;
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let shard = oemputx::commands::merge::read_shard(&large).expect("read");
    let peak = PEAK.load(Ordering::Relaxed) - before;
    assert_eq!(shard.report.processes.len(), 100_000);
    let ratio = peak as f64 / size as f64;
    eprintln!("file {size} bytes, peak {peak} bytes while reading it: {ratio:.2}x");
    // The bytes once, the typed rows (a Vec grown by doubling), nothing else the file's size.
    assert!(
        ratio < 3.0,
        "reading a {size}-byte shard held {peak} bytes ({ratio:.2}x)"
    );
}
