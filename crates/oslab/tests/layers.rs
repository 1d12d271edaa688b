//! The crates' layering, as docs/ARCHITECTURE.md draws it: which oslab crate each may depend on
//! (so nothing reaches up, and the store, the report and the model never reach the OS), and a
//! core that never reads or changes the operating system.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn crates() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Each crate's oslab dependencies (normal ones: tests may use anything), from its Cargo.toml.
fn arrows() -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(crates()).unwrap().flatten() {
        let Ok(manifest) = std::fs::read_to_string(entry.path().join("Cargo.toml")) else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        let deps = manifest
            .split("\n[")
            .find(|section| section.starts_with("dependencies]"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split(['.', ' ', '=']).next())
            .filter(|d| d.starts_with("oslab-"))
            .map(String::from)
            .collect();
        out.insert(name, deps);
    }
    out
}

#[test]
fn no_crate_depends_on_one_the_map_does_not_allow() {
    let allowed: BTreeMap<&str, &[&str]> = BTreeMap::from([
        ("oslab-core", &[][..]),
        ("oslab-files", &[][..]),
        ("oslab-os", &["oslab-core", "oslab-files"][..]),
        ("oslab-model", &["oslab-core"][..]),
        (
            "oslab-probes",
            &["oslab-core", "oslab-os", "oslab-model", "oslab-files"][..],
        ),
        ("oslab-shuffle", &["oslab-core", "oslab-os"][..]),
        (
            "oslab-cpuman",
            &["oslab-core", "oslab-os", "oslab-files"][..],
        ),
        ("oslab-store", &["oslab-core", "oslab-files"][..]),
        (
            "oslab-fleet",
            &["oslab-core", "oslab-os", "oslab-files", "oslab-store"][..],
        ),
        (
            "oslab-report",
            &["oslab-core", "oslab-files", "oslab-store", "oslab-fleet"][..],
        ),
        ("oslab-testkit", &["oslab-files"][..]),
    ]);
    for (name, deps) in arrows() {
        if name == "oslab" {
            continue; // the CLI knows them all
        }
        let Some(ok) = allowed.get(name.as_str()) else {
            panic!("{name} is not on the map (docs/ARCHITECTURE.md and this test): say what it may know");
        };
        let beyond: Vec<&String> = deps.iter().filter(|d| !ok.contains(&d.as_str())).collect();
        assert!(
            beyond.is_empty(),
            "{name} depends on {beyond:?}, which the map does not allow it"
        );
    }
}

#[test]
fn the_core_never_reads_or_changes_the_os() {
    let manifest = std::fs::read_to_string(crates().join("oslab-core/Cargo.toml")).unwrap();
    assert!(!manifest.contains("libc"), "oslab-core depends on libc");
    // What would reach the OS from Rust's standard library, and libc's calls.
    let reaching = [
        "std::fs",
        "std::process",
        "std::env",
        "std::net",
        "std::os::",
        "std::thread::spawn",
        "std::io::stdin",
        "std::io::stdout",
        "std::io::stderr",
        "libc::",
        "asm!",
        "File::",
    ];
    let mut stack = vec![crates().join("oslab-core/src")];
    let mut found = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                // Text inside quotes names things; it does not call them.
                let code: String = code.split('"').step_by(2).collect();
                for word in reaching.iter().filter(|w| code.contains(*w)) {
                    found.push(format!("{}:{}: {word}", path.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "oslab-core reaches the OS (it belongs in oslab-os or oslab-files):\n{}",
        found.join("\n")
    );
}
