//! Checks a document against the shipped JSON Schema (`schema/oslab.run.v1.schema.json`).
//!
//! Only the keywords that schema uses are understood (type, const, enum, required, properties,
//! additionalProperties, items, minimum, minLength/maxLength, maxItems, maxProperties, oneOf,
//! if/then, local `$ref`), with the meaning JSON Schema 2020-12 gives them. A keyword it does
//! not know makes the check refuse every document (and a unit test fails), so the schema cannot
//! grow a rule that is silently not checked. A general validator cost a fifth of the cold build.

use serde_json::{Map, Value};

/// Keywords that only document.
const ANNOTATIONS: &[&str] = &["$schema", "$id", "title", "description", "$defs"];

/// Problems found, each as "at /json/pointer: what"; at most `limit`.
pub fn check(schema: &Value, value: &Value, limit: usize) -> Vec<String> {
    let mut c = Checker {
        root: schema,
        problems: Vec::new(),
        limit,
    };
    c.check(schema, value, &mut String::new());
    c.problems
}

/// Problems of `value` found at `at` (a JSON pointer) against `root`'s definition `def`
/// (`#/$defs/def`): one element of a document, checked as the whole document would check it.
pub fn check_def(root: &Value, def: &str, value: &Value, at: &str, limit: usize) -> Vec<String> {
    let mut c = Checker {
        root,
        problems: Vec::new(),
        limit,
    };
    let reference = serde_json::json!({ "$ref": format!("#/$defs/{def}") });
    c.check(&reference, value, &mut at.to_string());
    c.problems
}

struct Checker<'s> {
    root: &'s Value,
    problems: Vec<String>,
    limit: usize,
}

impl<'s> Checker<'s> {
    fn fail(&mut self, at: &str, what: String) {
        if self.problems.len() < self.limit {
            let at = if at.is_empty() { "/" } else { at };
            self.problems.push(format!("at {at}: {what}"));
        }
    }

    fn full(&self) -> bool {
        self.problems.len() >= self.limit
    }

    /// Whether `value` passes `schema`, without recording why not.
    fn passes(&self, schema: &'s Value, value: &Value) -> bool {
        let mut probe = Checker {
            root: self.root,
            problems: Vec::new(),
            limit: 1,
        };
        probe.check(schema, value, &mut String::new());
        probe.problems.is_empty()
    }

    fn check(&mut self, schema: &'s Value, value: &Value, at: &mut String) {
        let Some(rules) = schema.as_object() else {
            if schema == &Value::Bool(false) {
                self.fail(at, "no value is allowed here".into());
            }
            return;
        };
        for (keyword, rule) in rules {
            if self.full() {
                return;
            }
            match keyword.as_str() {
                "type" => {
                    let allowed: Vec<&str> = match rule {
                        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                        other => other.as_str().into_iter().collect(),
                    };
                    if !allowed.iter().any(|t| has_type(value, t)) {
                        self.fail(
                            at,
                            format!("{} is not of type {}", kind(value), allowed.join(" or ")),
                        );
                    }
                }
                "const" if value != rule => self.fail(at, format!("must be {rule}")),
                "enum" if !rule.as_array().is_some_and(|a| a.contains(value)) => {
                    self.fail(at, format!("{} is not one of {rule}", shown(value)))
                }
                "required" => {
                    if let Some(obj) = value.as_object() {
                        for name in rule
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                        {
                            if !obj.contains_key(name) {
                                self.fail(at, format!("{name:?} is required"));
                            }
                        }
                    }
                }
                // Both read together, once: the extra rule applies to names not listed.
                "properties" | "additionalProperties"
                    if keyword == "properties" || !rules.contains_key("properties") =>
                {
                    if let Some(obj) = value.as_object() {
                        self.properties(rules, obj, at);
                    }
                }
                "items" => {
                    for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                        let len = at.len();
                        at.push_str(&format!("/{i}"));
                        self.check(rule, item, at);
                        at.truncate(len);
                    }
                }
                "minimum" => {
                    if let (Some(v), Some(min)) = (value.as_f64(), rule.as_f64()) {
                        if v < min {
                            self.fail(at, format!("{v} is less than the minimum of {min}"));
                        }
                    }
                }
                "maximum" => {
                    if let (Some(v), Some(max)) = (value.as_f64(), rule.as_f64()) {
                        if v > max {
                            self.fail(at, format!("{v} is more than the maximum of {max}"));
                        }
                    }
                }
                // The one format the documents use: a date and time as the importer reads it.
                "format" => match rule.as_str() {
                    Some("date-time") => {
                        if let Some(s) = value.as_str().filter(|s| !oslab_core::time::is_rfc3339(s))
                        {
                            self.fail(at, format!("{s:?} is not an RFC 3339 date and time"));
                        }
                    }
                    _ => self.fail(
                        at,
                        format!("the schema's format {rule} cannot be checked here"),
                    ),
                },
                "minLength" | "maxLength" => {
                    if let (Some(s), Some(n)) = (value.as_str(), rule.as_u64()) {
                        let len = s.chars().count() as u64;
                        if keyword == "minLength" && len < n {
                            self.fail(at, format!("shorter than {n} characters"));
                        } else if keyword == "maxLength" && len > n {
                            self.fail(at, format!("longer than {n} characters ({len})"));
                        }
                    }
                }
                "maxItems" => {
                    if let (Some(a), Some(n)) = (value.as_array(), rule.as_u64()) {
                        if a.len() as u64 > n {
                            self.fail(at, format!("more than {n} items ({})", a.len()));
                        }
                    }
                }
                "maxProperties" => {
                    if let (Some(o), Some(n)) = (value.as_object(), rule.as_u64()) {
                        if o.len() as u64 > n {
                            self.fail(at, format!("more than {n} properties ({})", o.len()));
                        }
                    }
                }
                "oneOf" => {
                    let matching = rule
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|s| self.passes(s, value))
                        .count();
                    if matching != 1 {
                        self.fail(
                            at,
                            format!(
                                "{} matches {matching} of the allowed forms, not exactly one",
                                kind(value)
                            ),
                        );
                    }
                }
                "if" => {
                    if self.passes(rule, value) {
                        if let Some(then) = rules.get("then") {
                            self.check(then, value, at);
                        }
                    }
                }
                "$ref" => match rule.as_str().and_then(|r| self.resolve(r)) {
                    Some(target) => self.check(target, value, at),
                    None => self.fail(
                        at,
                        format!("the schema's reference {rule} cannot be resolved"),
                    ),
                },
                "then" | "const" | "enum" | "additionalProperties" => {}
                k if ANNOTATIONS.contains(&k) => {}
                k => self.fail(
                    at,
                    format!("the schema uses {k:?}, which this check does not know"),
                ),
            }
        }
    }

    /// `properties` and `additionalProperties` of one object.
    fn properties(
        &mut self,
        rules: &'s Map<String, Value>,
        obj: &Map<String, Value>,
        at: &mut String,
    ) {
        let known = rules.get("properties").and_then(Value::as_object);
        let extra = rules.get("additionalProperties");
        for (name, v) in obj {
            let len = at.len();
            at.push('/');
            at.push_str(&name.replace('~', "~0").replace('/', "~1"));
            match (known.and_then(|k| k.get(name)), extra) {
                (Some(s), _) | (None, Some(s)) => self.check(s, v, at),
                (None, None) => {}
            }
            at.truncate(len);
        }
    }

    /// A local reference, `#/$defs/name`.
    fn resolve(&self, reference: &str) -> Option<&'s Value> {
        self.root.pointer(reference.strip_prefix('#')?)
    }
}

fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => false,
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value in a message, bounded: a hostile document's strings can be megabytes.
fn shown(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shipped() -> Value {
        serde_json::from_str(crate::exchange::SCHEMA).unwrap()
    }

    #[test]
    fn every_keyword_of_the_shipped_schema_is_understood() {
        // A document that exercises nothing still walks the root's keywords; the defs are
        // walked through a measurement and an event that use every property.
        let doc = json!({"schema": "oslab.run/1", "run": {"started": "2026-01-01T00:00:00Z", "finished": "2026-01-01T00:00:01Z", "status": "complete",
            "oslab_version": "0", "command": "", "hostname": "h", "quick": false, "wall_s": 1.0,
            "fingerprint": {}, "environment": {}, "tags": {"a": "b"}}, "measurements": [], "timeline": []});
        assert_eq!(check(&shipped(), &doc, 10), Vec::<String>::new());
        fn keywords(v: &Value, out: &mut Vec<String>) {
            if let Some(o) = v.as_object() {
                for (k, v) in o {
                    out.push(k.clone());
                    match k.as_str() {
                        "properties" | "$defs" => v
                            .as_object()
                            .unwrap()
                            .values()
                            .for_each(|s| keywords(s, out)),
                        "enum" | "const" | "required" => {}
                        _ => keywords(v, out),
                    }
                }
            } else if let Some(a) = v.as_array() {
                a.iter().for_each(|s| keywords(s, out));
            }
        }
        let mut used = Vec::new();
        keywords(&shipped(), &mut used);
        let empty = json!({});
        for k in used {
            if ANNOTATIONS.contains(&k.as_str()) {
                continue;
            }
            let schema = json!({ k.clone(): empty.clone() });
            let p = check(&schema, &json!(1), 5);
            assert!(!p.iter().any(|p| p.contains("does not know")), "{k}: {p:?}");
        }
        assert!(check(&json!({"patternProperties": {}}), &json!(1), 5)[0].contains("does not know"));
    }

    #[test]
    fn the_schema_says_a_date_is_one_as_the_importer_does() {
        let run = |started: &str| {
            json!({"schema": "oslab.run/1", "run": {"started": started, "finished": "2026-01-01T00:00:01Z",
                "status": "complete", "oslab_version": "0", "command": "", "hostname": "h", "quick": false,
                "wall_s": 1.0, "fingerprint": {}, "environment": {}}, "measurements": [], "timeline": []})
        };
        assert!(check(&shipped(), &run("2026-01-01T00:00:00.5Z"), 5).is_empty());
        let p = check(&shipped(), &run("yesterday"), 5);
        assert!(
            p.iter()
                .any(|p| p.contains("/run/started") && p.contains("RFC 3339")),
            "{p:?}"
        );
        assert!(!check(&json!({"format": "email"}), &json!("a@b"), 5).is_empty());
    }

    #[test]
    fn each_rule_is_enforced_with_where_and_why() {
        let s = json!({"type": "object", "required": ["a"], "additionalProperties": false,
            "properties": {"a": {"type": "integer", "minimum": 1},
                "b": {"type": ["string", "null"], "maxLength": 3, "minLength": 1},
                "c": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/e"}},
                "d": {"oneOf": [{"type": "null"}, {"$ref": "#/$defs/e"}]},
                "t": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}},
                "s": {"enum": ["ok", "failed"]}},
            "if": {"properties": {"s": {"enum": ["failed"]}}}, "then": {"required": ["b"]},
            "$defs": {"e": {"const": "x"}}});
        let ok = json!({"a": 2, "b": "ab", "c": ["x"], "d": null, "t": {"k": "v"}, "s": "ok"});
        assert_eq!(check(&s, &ok, 10), Vec::<String>::new());
        let cases = [
            (json!([]), "at /: an array is not of type object"),
            (json!({}), "at /: \"a\" is required"),
            (json!({"a": 0}), "at /a: 0 is less than the minimum of 1"),
            (json!({"a": 1.5}), "at /a: a number is not of type integer"),
            (
                json!({"a": 1, "b": "abcd"}),
                "at /b: longer than 3 characters (4)",
            ),
            (json!({"a": 1, "b": ""}), "at /b: shorter than 1 characters"),
            (
                json!({"a": 1, "c": ["x", "x", "x"]}),
                "at /c: more than 2 items (3)",
            ),
            (json!({"a": 1, "c": ["y"]}), "at /c/0: must be \"x\""),
            (
                json!({"a": 1, "d": "y"}),
                "at /d: a string matches 0 of the allowed forms",
            ),
            (
                json!({"a": 1, "t": {"k": "v", "l": "w"}}),
                "at /t: more than 1 properties (2)",
            ),
            (
                json!({"a": 1, "t": {"k/~": 1}}),
                "at /t/k~1~0: a number is not of type string",
            ),
            (
                json!({"a": 1, "s": "maybe"}),
                "at /s: \"maybe\" is not one of",
            ),
            (json!({"a": 1, "s": "failed"}), "at /: \"b\" is required"),
            (json!({"a": 1, "z": 1}), "at /z: no value is allowed here"),
        ];
        for (doc, want) in cases {
            let p = check(&s, &doc, 10);
            assert!(p.iter().any(|p| p.starts_with(want)), "{doc}: {p:?}");
        }
        // Messages quote at most a bounded part of the input.
        let long = "q".repeat(10_000);
        let p = check(&s, &json!({"a": 1, "s": long}), 10);
        assert!(p[0].len() < 200, "{}", p[0].len());
        // At most `limit` problems.
        assert_eq!(
            check(&json!({"items": {"type": "null"}}), &json!([1, 2, 3]), 2).len(),
            2
        );
    }
}
