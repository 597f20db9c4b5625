//! A one-shot latch: task threads wait at it until the driver opens it for a phase (the
//! probe, a measured round, closing) or abandons it.

use std::sync::{Condvar, Mutex};

/// Tasks wait until it opens (true) or is abandoned (false).
#[derive(Default)]
pub(super) struct Latch {
    state: Mutex<Option<bool>>,
    cv: Condvar,
}

impl Latch {
    pub(super) fn open(&self, go: bool) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = Some(go);
        self.cv.notify_all();
    }

    pub(super) fn wait(&self) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(go) = *s {
                return go;
            }
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }
}
