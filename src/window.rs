//! The measured-window contract between the driver and whoever measures.
//!
//! The driver knows nothing of CPU and accounting knows nothing of brokers: the driver calls a
//! [`Window`] at the two instants that bound the measured traffic, and the CPU clocks, the
//! process snapshots and the progress display do their work there.

/// Called at the two instants that bound the measured window.
pub trait Window {
    /// Right before the first measured put.
    fn start(&mut self);
    /// Right after the last measured reply (before any connection is closed).
    fn end(&mut self);
}

/// A window that measures nothing.
pub struct NoWindow;

impl Window for NoWindow {
    fn start(&mut self) {}
    fn end(&mut self) {}
}

/// Several windows in one: started in order, ended in reverse, so that the innermost (the
/// driver's own CPU) is the closest to the traffic and the snapshots stay outside it.
pub struct Windows<'a>(pub Vec<&'a mut dyn Window>);

impl Window for Windows<'_> {
    fn start(&mut self) {
        for w in self.0.iter_mut() {
            w.start();
        }
    }
    fn end(&mut self) {
        for w in self.0.iter_mut().rev() {
            w.end();
        }
    }
}
