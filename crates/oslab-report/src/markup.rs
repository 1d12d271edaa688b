//! HTML and Markdown primitives: escaping, a folded section, a `core::text` table as HTML,
//! Markdown tables and text made safe.

use std::fmt::Write;

/// Escapes text for HTML element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `body` under a `<details>` whose summary is `summary`, open when `open`; wide content scrolls
/// inside its box instead of widening the page.
pub(crate) fn folded(summary: &str, body: &str, open: bool) -> String {
    format!(
        "<details{}><summary>{}</summary><div class=\"scroll\">{body}</div></details>\n",
        if open { " open" } else { "" },
        escape(summary)
    )
}

/// Markdown `body` folded under `summary`, as GitHub and CommonMark viewers draw `<details>`:
/// the blank lines around the body keep it Markdown (a table stays a table).
pub(crate) fn md_folded(summary: &str, body: &str, open: bool) -> String {
    format!(
        "<details{}><summary>{}</summary>\n\n{}\n\n</details>\n\n",
        if open { " open" } else { "" },
        escape(summary),
        body.trim_end()
    )
}

/// A [`oslab_core::text::Table`] as an HTML table.
pub(crate) fn text_table(t: &oslab_core::text::Table) -> String {
    let mut h = String::from("<table><tr>");
    for c in &t.header {
        let _ = write!(h, "<th>{}</th>", escape(c));
    }
    h.push_str("</tr>\n");
    for row in &t.rows {
        h.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = if t.numeric.contains(&i) {
                " class=\"n\""
            } else {
                ""
            };
            let _ = write!(h, "<td{class}>{}</td>", escape(cell));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    h
}

/// A table of [`oslab_core::text`] as a Markdown table (numbers aligned right).
pub(crate) fn md_table(t: &oslab_core::text::Table) -> String {
    let line = |cells: &[String]| {
        let shown: Vec<String> = cells.iter().map(|c| md_text(c)).collect();
        format!("| {} |\n", shown.join(" | "))
    };
    let mut md = line(&t.header);
    let rule: Vec<&str> = (0..t.header.len())
        .map(|c| if t.numeric.contains(&c) { "--:" } else { "---" })
        .collect();
    let _ = writeln!(md, "|{}|", rule.join("|"));
    for r in &t.rows {
        md.push_str(&line(r));
    }
    md
}

/// Text safe inside a Markdown table cell or paragraph.
/// Text that Markdown shows as text: one line, every character with a meaning in CommonMark
/// (emphasis, links, code, tables, raw HTML, entities) escaped.
pub(crate) fn md_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '#' | '|' | '!' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A code span that stays one span: on one line (a blank line would end it and let what follows
/// be read as HTML), without backticks.
pub(crate) fn md_code(s: &str) -> String {
    let one_line: String = s
        .chars()
        .map(|c| match c {
            '`' => '\'',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    format!("`{}`", one_line.trim())
}
