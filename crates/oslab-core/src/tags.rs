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
        Ok(())
    }
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
