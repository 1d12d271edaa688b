//! What a library has to tell a person while it works and cannot return (another process holds
//! the store, a setting could not be put back as a guard dropped, a replayed file changed): said
//! through the one sink the program installs. Libraries never print; the CLI installs a sink
//! that writes to standard error. Without one, notices are kept (the most recent
//! [`KEPT_AT_MOST`]) for [`drain`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

static SINK: OnceLock<fn(&str)> = OnceLock::new();
static DETAILS: AtomicBool = AtomicBool::new(false);
static KEPT: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Notices kept without a sink, the oldest dropped first.
pub const KEPT_AT_MOST: usize = 64;

/// Sends every notice from now on to `sink` (once; later calls change nothing).
pub fn install(sink: fn(&str)) {
    let _ = SINK.set(sink);
}

/// Tells a person `message`: through the installed sink, else kept for [`drain`].
pub fn say(message: &str) {
    match SINK.get() {
        Some(sink) => sink(message),
        None => {
            let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
            if kept.len() == KEPT_AT_MOST {
                kept.remove(0);
            }
            kept.push(message.to_string());
        }
    }
}

/// Whether [`detail`] says anything from now on (`-v`).
pub fn show_details(on: bool) {
    DETAILS.store(on, Ordering::Relaxed);
}

/// Tells a person a decision made while working (a batch's size, a retry, a budget), only when
/// details were asked for ([`show_details`]); prefixed with who decided (`harness: ...`).
pub fn detail(who: &str, message: &str) {
    if DETAILS.load(Ordering::Relaxed) {
        say(&format!("{who}: {message}"));
    }
}

/// The notices kept so far (without a sink), oldest first; they are kept no longer.
pub fn drain() -> Vec<String> {
    std::mem::take(&mut *KEPT.lock().unwrap_or_else(|e| e.into_inner()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn without_a_sink_notices_are_kept_and_bounded() {
        for i in 0..super::KEPT_AT_MOST + 5 {
            super::say(&format!("notice {i}"));
        }
        let kept = super::drain();
        assert_eq!(kept.len(), super::KEPT_AT_MOST);
        assert_eq!(kept[0], "notice 5");
        assert!(super::drain().is_empty());
    }
}
