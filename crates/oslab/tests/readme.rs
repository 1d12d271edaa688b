//! What the README and the architecture map say holds: every `oslab` command they show is one
//! oslab accepts (its subcommand and every flag), every script they name exists, the headline
//! excerpt's rows are the headline's. A README that
//! drifted from the code misleads the first person who copies a line from it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap()
}

/// The lines of the README's ```sh blocks, continuations joined.
fn shell_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.starts_with("```") {
            inside = line == "```sh";
            continue;
        }
        if !inside {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(head) => pending.push_str(head),
            None => {
                pending.push_str(line);
                out.push(std::mem::take(&mut pending));
            }
        }
    }
    out
}

/// Words as a POSIX shell splits them (quotes, no expansion), up to a comment; `&&`, `;` and
/// `|` end a command (each command its own list).
fn commands(line: &str) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new()];
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    let end = |out: &mut Vec<Vec<String>>, word: &mut Option<String>| {
        if let Some(w) = word.take() {
            out.last_mut().unwrap().push(w);
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                let w = word.get_or_insert_with(String::new);
                for q in chars.by_ref() {
                    if q == c {
                        break;
                    }
                    w.push(q);
                }
            }
            '#' if word.is_none() => break,
            ' ' | '\t' => end(&mut out, &mut word),
            '&' | ';' | '|' => {
                end(&mut out, &mut word);
                while chars.peek().is_some_and(|n| "&|".contains(*n)) {
                    chars.next();
                }
                out.push(Vec::new());
            }
            _ => word.get_or_insert_with(String::new).push(c),
        }
    }
    end(&mut out, &mut word);
    out.retain(|c| !c.is_empty());
    out
}

/// oslab's arguments in a command (`oslab ...`, `cargo run --release -- ...`, after a wrapper
/// such as `scripts/vm 2s --`), redirections left out; None when it runs no oslab.
fn oslab_args(words: &[String]) -> Option<Vec<String>> {
    let start = if words.first().map(String::as_str) == Some("cargo") {
        words.iter().position(|w| w == "--")? + 1
    } else {
        // The command word, or the command a wrapper runs (`scripts/vm 2s -- oslab ...`,
        // `scripts/cluster exec .../oslab ...`); never an argument (`cp target/release/oslab`).
        (0..words.len()).find(|&i| {
            Path::new(&words[i])
                .file_name()
                .is_some_and(|n| n == "oslab")
                && (i == 0 || ["--", "exec"].contains(&words[i - 1].as_str()))
        })? + 1
    };
    let mut args = Vec::new();
    let mut rest = words[start..].iter();
    while let Some(w) = rest.next() {
        if w.starts_with('>') || w.starts_with("2>") || w.starts_with('<') {
            if w.trim_start_matches(['2', '>', '<']).is_empty() {
                rest.next();
            }
            continue;
        }
        args.push(w.clone());
    }
    Some(args)
}

#[test]
fn every_oslab_command_the_readme_shows_is_accepted() {
    let bin = assert_cmd::cargo::cargo_bin("oslab");
    let mut checked = 0;
    let mut refused = Vec::new();
    for line in shell_lines(&read("README.md")) {
        for words in commands(&line) {
            let Some(args) = oslab_args(&words) else {
                continue;
            };
            // --help before any `--`: clap has then read every flag and value before it (an
            // unknown flag or subcommand is refused) and runs nothing.
            let cut = args.iter().position(|a| a == "--").unwrap_or(args.len());
            let mut asked: Vec<String> = args[..cut].to_vec();
            asked.push("--help".into());
            let out = Command::new(&bin).args(&asked).output().unwrap();
            checked += 1;
            if !out.status.success() {
                refused.push(format!(
                    "{line}\n  oslab {}: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
    }
    assert!(checked >= 30, "only {checked} commands found in the README");
    assert!(refused.is_empty(), "{}", refused.join("\n"));
}

/// A manual page's example is what a person copies: oslab accepts it, and it is shown on the page
/// of its command.
#[test]
fn every_manual_page_example_is_accepted_on_its_commands_page() {
    let bin = assert_cmd::cargo::cargo_bin("oslab");
    let mut n = 0;
    for (path, line, what) in oslab_report::man::examples() {
        n += 1;
        assert!(!what.is_empty(), "{line}: says what it does");
        let words = commands(line).into_iter().next().unwrap_or_default();
        let args = oslab_args(&words).unwrap_or_else(|| panic!("{line}: no oslab command"));
        let cut = args.iter().position(|a| a == "--").unwrap_or(args.len());
        let out = Command::new(&bin)
            .args(&args[..cut])
            .arg("--help")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let page: Vec<&str> = path.split_whitespace().collect();
        assert!(
            page.is_empty() || args.windows(page.len()).any(|w| w == page),
            "{line} is shown on the page of `{path}`"
        );
    }
    assert!(n >= 20, "{n} examples");
}

#[test]
fn every_script_the_readme_and_the_map_name_exists() {
    for doc in ["README.md", "docs/ARCHITECTURE.md"] {
        let text = read(doc);
        for (i, _) in text.match_indices("scripts/") {
            let name: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "/-_.".contains(*c))
                .collect();
            let name = name.trim_end_matches('.');
            let path = root().join(name);
            assert!(path.exists(), "{doc} names {name}, which does not exist");
        }
    }
}

#[test]
fn the_headline_excerpt_has_the_headlines_rows() {
    let text = read("README.md");
    let start = text
        .find("\nheadline\n")
        .expect("the README shows a headline");
    let rows: Vec<&str> = text[start..]
        .lines()
        .skip_while(|l| !l.starts_with('─'))
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .collect();
    assert!(rows.len() >= 8, "{rows:?}");
    for row in rows {
        let name = row.trim_start();
        assert!(
            oslab_core::catalog::HEADLINE
                .iter()
                .any(|h| name.starts_with(h.label)),
            "the README's headline row {name:?} is no headline line of the catalog"
        );
    }
}

#[test]
fn shell_words_split_as_a_shell_splits_them() {
    assert_eq!(
        commands("oslab run 'switch.*' --cpu 1 # only switches"),
        [["oslab", "run", "switch.*", "--cpu", "1"]]
    );
    assert_eq!(
        commands("oslab fleet collect /r && oslab fleet summary 4711").len(),
        2
    );
    assert_eq!(
        oslab_args(&commands("scripts/vm 8n64 --out res -- oslab c2c --json > /out/c.json")[0]),
        Some(vec!["c2c".to_string(), "--json".to_string()])
    );
    assert_eq!(
        oslab_args(&commands("cargo run --release -- run")[0]),
        Some(vec!["run".to_string()])
    );
}
