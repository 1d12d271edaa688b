//! What /proc says of a process that made a record (a run being written, a setting changed):
//! whether it still lives, and which boot this is. One reading for the store and the OS side.

/// Whether process `pid` exists and is not a zombie (one that has ended but is not yet reaped,
/// a killed writer among them, holds nothing and changes nothing).
pub fn alive(pid: i64) -> bool {
    if pid <= 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses, which may itself hold ')'.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| state != 'Z' && state != 'X'),
        Err(_) => false,
    }
}

/// This boot's random id (it changes at every boot), so that a pid from an earlier boot is never
/// taken for a live process; None where /proc does not give it.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zombie_is_gone_a_live_process_and_this_boot_are_there() {
        assert!(alive(std::process::id() as i64));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i64;
        // Ended, not yet reaped: a zombie.
        let t = std::time::Instant::now();
        while alive(pid) && t.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!alive(pid));
        child.wait().unwrap();
        assert!(!alive(pid) && !alive(0) && !alive(-1));
        assert!(boot_id().is_some_and(|b| b.len() >= 32), "{:?}", boot_id());
    }
}
