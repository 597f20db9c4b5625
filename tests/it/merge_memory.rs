//! What `merge` holds in memory while it reads a shard: the file's bytes once and the typed
//! report, never a `serde_json::Value` of the whole file (which held about 17 times the
//! files' size). Measured with a counting allocator that counts only the thread that asked
//! for it: the other tests of this binary allocate on threads of their own at the same time.

use oemputx_test_support::*;
use serde_json::Value;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering};

/// The system allocator, counting the bytes a counting thread allocates and frees, and
/// their peak.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    // A const-initialised Cell with no destructor: reading it never allocates, so the
    // allocator may read it.
    static COUNTS: Cell<bool> = const { Cell::new(false) };
}

fn counted() -> bool {
    COUNTS.try_with(Cell::get).unwrap_or(false)
}

// SAFETY: every call is passed to the system allocator as it came; the counters are atomics
// and the thread-local flag is a const Cell that needs no allocation.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() && counted() {
            let size = layout.size() as isize;
            let now = LIVE.fetch_add(size, Ordering::Relaxed) + size;
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        if counted() {
            LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
    }
    // The system's own realloc (the default would allocate, copy and free): every test of
    // the binary grows its vectors through here.
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, layout, new_size) };
        if !q.is_null() && counted() {
            let grown = new_size as isize - layout.size() as isize;
            let now = LIVE.fetch_add(grown, Ordering::Relaxed) + grown;
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The peak of the bytes `f` held live at once on this thread, above what it started with.
/// Other threads' allocations are not counted; `read_shard` spawns none, and the test
/// checks that the count saw at least the file's bytes, so that work moved to another
/// thread could not pass unseen.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LIVE.store(0, Ordering::Relaxed);
    PEAK.store(0, Ordering::Relaxed);
    COUNTS.with(|c| c.set(true));
    let out = f();
    COUNTS.with(|c| c.set(false));
    (out, PEAK.load(Ordering::Relaxed).max(0) as usize)
}

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
    let (shard, peak) = peak_of(|| oemputx::report::shard_files::read_shard(&large));
    let shard = shard.expect("read");
    assert_eq!(shard.report.processes.len(), 100_000);
    let ratio = peak as f64 / size as f64;
    eprintln!("file {size} bytes, peak {peak} bytes while reading it: {ratio:.2}x");
    assert!(
        peak >= size,
        "the count saw {peak} bytes, fewer than the file's {size} that reading it must hold: did the reading move to another thread?"
    );
    // The bytes once, the typed rows (a Vec grown by doubling), nothing else the file's size.
    assert!(
        ratio < 3.0,
        "reading a {size}-byte shard held {peak} bytes ({ratio:.2}x)"
    );
}
