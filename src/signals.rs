//! Which signal stopped the run: set by the handlers `main` installs, read by whatever
//! reports the stop (a report says SIGTERM from a supervisor, not Ctrl-C). A leaf module, so
//! that reports can name the signal without depending on the exit codes above them.

/// The signal that interrupted the run (0 when none), set by the handlers `main` installs:
/// a report says which one stopped it (SIGTERM from a supervisor is no Ctrl-C).
pub static LAST_SIGNAL: std::sync::LazyLock<std::sync::Arc<std::sync::atomic::AtomicUsize>> =
    std::sync::LazyLock::new(Default::default);

/// How a report names what interrupted the run.
pub fn interrupted_by() -> &'static str {
    match LAST_SIGNAL.load(std::sync::atomic::Ordering::Relaxed) as i32 {
        signal_hook::consts::SIGTERM => "SIGTERM",
        _ => "Ctrl-C",
    }
}
