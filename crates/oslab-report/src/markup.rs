//! HTML and Markdown primitives: the [`Html`] type every page is built of, a folded section, a
//! `core::text` table as HTML, Markdown tables and text made safe.

use std::fmt::Write;

/// Markup oslab wrote. Text from a run, a user or a machine becomes `Html` only escaped
/// ([`Html::text`], or as an argument of [`html!`]): no stored string can reach a page raw, by
/// construction rather than by each writer remembering to escape.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Html(String);

impl Html {
    /// `s` as text: every character with a meaning in HTML escaped.
    pub fn text(s: &str) -> Html {
        Html(escape(s))
    }

    /// What [`html!`] formats: its literal is ours and each argument was made `Html` first.
    #[doc(hidden)]
    pub fn formatted(s: String) -> Html {
        Html(s)
    }

    /// An SVG drawing this crate made whole, every text in it escaped where it was drawn (the
    /// plots and the machine map): the one other door into `Html`.
    pub(crate) fn drawn(svg: String) -> Html {
        Html(svg)
    }

    /// Appends `more`.
    pub fn push(&mut self, more: Html) {
        self.0.push_str(&more.0);
    }

    /// The markup.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The markup, for writing out.
    pub fn into_string(self) -> String {
        self.0
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Display for Html {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromIterator<Html> for Html {
    fn from_iter<I: IntoIterator<Item = Html>>(iter: I) -> Html {
        let mut h = Html::default();
        iter.into_iter().for_each(|x| h.push(x));
        h
    }
}

/// What an argument of [`html!`] becomes: `Html` as it is, text and numbers escaped.
pub trait ToHtml {
    /// This as markup.
    fn to_html(&self) -> Html;
}

impl ToHtml for Html {
    fn to_html(&self) -> Html {
        self.clone()
    }
}

impl ToHtml for str {
    fn to_html(&self) -> Html {
        Html::text(self)
    }
}

impl ToHtml for String {
    fn to_html(&self) -> Html {
        Html::text(self)
    }
}

impl<T: ToHtml + ?Sized> ToHtml for &T {
    fn to_html(&self) -> Html {
        (**self).to_html()
    }
}

macro_rules! numbers_to_html {
    ($($t:ty),*) => {$(
        impl ToHtml for $t {
            fn to_html(&self) -> Html {
                Html::text(&self.to_string())
            }
        }
    )*};
}
numbers_to_html!(usize, u32, u64, i64, f64);

/// Whether a format string takes positional arguments only: a name captured inline (`{x}`)
/// would be formatted as it is, not through [`ToHtml`], so [`html!`] refuses it at compile time.
pub const fn positional_only(fmt: &str) -> bool {
    let b = fmt.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'{' && i + 1 < b.len() {
            if b[i + 1] == b'{' {
                i += 2;
                continue;
            }
            if b[i + 1].is_ascii_alphabetic() || b[i + 1] == b'_' {
                return false;
            }
        }
        i += 1;
    }
    true
}

/// `format!` for markup: the literal is ours, every argument is made [`Html`] ([`ToHtml`]:
/// text escaped, `Html` kept). Positional arguments only (checked when compiled), and no
/// format specifications: a number is formatted to text before.
macro_rules! html {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {{
        const _: () = assert!(
            $crate::markup::positional_only($fmt),
            "html! takes positional arguments only: a captured name would not be escaped"
        );
        $crate::markup::Html::formatted(format!($fmt $(, $crate::markup::ToHtml::to_html(&$arg))*))
    }};
}
pub(crate) use html;

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
pub(crate) fn folded(summary: &str, body: &Html, open: bool) -> Html {
    match open {
        true => html!(
            "<details open><summary>{}</summary><div class=\"scroll\">{}</div></details>\n",
            summary,
            body
        ),
        false => html!(
            "<details><summary>{}</summary><div class=\"scroll\">{}</div></details>\n",
            summary,
            body
        ),
    }
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
pub(crate) fn text_table(t: &oslab_core::text::Table) -> Html {
    let mut h = html!("<table><tr>");
    for c in &t.header {
        h.push(html!("<th>{}</th>", c));
    }
    h.push(html!("</tr>\n"));
    for row in &t.rows {
        h.push(html!("<tr>"));
        for (i, cell) in row.iter().enumerate() {
            h.push(match t.numeric.contains(&i) {
                true => html!("<td class=\"n\">{}</td>", cell),
                false => html!("<td>{}</td>", cell),
            });
        }
        h.push(html!("</tr>\n"));
    }
    h.push(html!("</table>\n"));
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
#[cfg(test)]
mod html_tests {
    use super::*;

    #[test]
    fn text_is_escaped_markup_kept_and_names_refused() {
        let evil = "<script>x</script>\"'&";
        let cell = html!("<td title=\"{}\">{}</td>", evil, Html::text("a<b"));
        assert_eq!(
            cell.as_str(),
            "<td title=\"&lt;script&gt;x&lt;/script&gt;&quot;&#39;&amp;\">&lt;script&gt;x&lt;/script&gt;&quot;&#39;&amp;</td>"
                .replace("&lt;script&gt;x&lt;/script&gt;&quot;&#39;&amp;</td>", "a&lt;b</td>")
        );
        assert_eq!(html!("{} of {}", 3usize, 4.5f64).as_str(), "3 of 4.5");
        assert!(positional_only("<p>{}</p> {{x}} {0}"));
        assert!(!positional_only("<p>{name}</p>"));
        assert!(!positional_only("{_x}"));
    }
}
