//! Where oslab keeps its files: under the XDG base directories.

use std::path::PathBuf;

/// oslab's directory under an XDG base directory: `$VAR/oslab`, else `~/FALLBACK/oslab` (e.g.
/// `XDG_DATA_HOME`, `.local/share`), else `./oslab`.
pub fn xdg_dir(var: &str, fallback: &str) -> PathBuf {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(fallback)))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("oslab")
}
