//! The crates' layering, as docs/ARCHITECTURE.md draws it: which oslab crate each may depend on
//! (so nothing reaches up, and the store, the report and the model never reach the OS), and a
//! core that never reads or changes the operating system.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn crates() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Each workspace crate's dependencies that are not dev-dependencies (tests may use anything),
/// as cargo resolves its manifest: every table (a `[target.'cfg(unix)'.dependencies]` entry
/// too), a renamed dependency by the package it names.
fn arrows() -> BTreeMap<String, Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(crates())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"] != "dev")
                .filter_map(|d| d["name"].as_str().map(String::from))
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
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
            &["oslab-core", "oslab-files", "oslab-store"][..],
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
        let beyond: Vec<&String> = deps
            .iter()
            .filter(|d| d.starts_with("oslab") && !ok.contains(&d.as_str()))
            .collect();
        assert!(
            beyond.is_empty(),
            "{name} depends on {beyond:?}, which the map does not allow it"
        );
    }
}

#[test]
fn the_core_never_reads_or_changes_the_os() {
    // No crate that calls the OS, under any table or name.
    let os_crates = [
        "libc",
        "nix",
        "rustix",
        "libc-print",
        "tokio",
        "mio",
        "socket2",
    ];
    let core = &arrows()["oslab-core"];
    let reaching: Vec<&String> = core
        .iter()
        .filter(|d| os_crates.contains(&d.as_str()))
        .collect();
    assert!(reaching.is_empty(), "oslab-core depends on {reaching:?}");
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
            // A grouped or renamed import names the same modules: `use std::{fs, process}`,
            // `use std as s`.
            found.extend(
                grouped_std_paths(&text)
                    .into_iter()
                    .filter(|p| {
                        reaching
                            .iter()
                            .any(|w| p.starts_with(w.trim_end_matches("::")))
                    })
                    .map(|p| format!("{}: {p} (grouped)", path.display())),
            );
            if text.contains("std as ") || text.contains("::std as ") {
                found.push(format!("{}: std renamed", path.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "oslab-core reaches the OS (it belongs in oslab-os or oslab-files):\n{}",
        found.join("\n")
    );
}

/// The paths a file's grouped `std::{...}` imports name, expanded (`std::{fs, io::{stdin}}`:
/// `std::fs`, `std::io::stdin`), comments and strings left out.
fn grouped_std_paths(text: &str) -> Vec<String> {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join(" ");
    let code: String = code.split('"').step_by(2).collect();
    let code: String = code.split_whitespace().collect();
    let mut out = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("std::{") {
        let group = &rest[at + "std::".len()..];
        expand("std", group, &mut out);
        rest = &rest[at + 1..];
    }
    out
}

/// Expands the `{...}` at the start of `group` under `prefix`.
fn expand(prefix: &str, group: &str, out: &mut Vec<String>) {
    // The group's items, split at its top-level commas.
    let (mut depth, mut start, mut items) = (0, 1, Vec::new());
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 1 => {
                items.push(&group[start..i]);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 1 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    for item in items.into_iter().filter(|i| !i.is_empty()) {
        match item.split_once("::{") {
            Some((head, _)) => {
                let inner = &item[head.len() + 2..];
                expand(&format!("{prefix}::{head}"), inner, out);
            }
            None => out.push(format!("{prefix}::{item}")),
        }
    }
}

#[test]
fn grouped_imports_are_read_as_the_paths_they_name() {
    let paths = grouped_std_paths(
        "use std::{fs, io::{self, stdin}, collections::BTreeMap};\n// std::{net}\n",
    );
    assert_eq!(
        paths,
        [
            "std::fs",
            "std::io::self",
            "std::io::stdin",
            "std::collections::BTreeMap"
        ]
    );
}
