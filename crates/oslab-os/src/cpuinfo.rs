//! The first processor block of /proc/cpuinfo: what the fingerprint and the clock read from it.

/// A field of the first processor block (`model name`, `flags`, ...).
pub fn field(name: &str) -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .take_while(|l| !l.trim().is_empty())
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
}

/// The CPU's flags.
pub fn flags() -> Vec<String> {
    field("flags")
        .map(|f| f.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}
