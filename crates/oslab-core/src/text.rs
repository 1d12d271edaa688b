//! What an experiment tells a person, as data: lines of text and tables, in order. The report
//! crate renders them (every terminal table the same way); the crates that measure never format
//! columns themselves.

/// A table: a header, rows of cells, and the columns that hold numbers (aligned right).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// Column names.
    pub header: Vec<String>,
    /// Rows, each as long as the header.
    pub rows: Vec<Vec<String>>,
    /// Columns aligned right.
    pub numeric: Vec<usize>,
    /// Columns left out, in this order, while the table is wider than the terminal (what the
    /// other columns or a more detailed table also say).
    pub optional: Vec<usize>,
}

impl Table {
    /// An empty table with these columns, of which `numeric` hold numbers.
    pub fn new(header: &[&str], numeric: &[usize]) -> Table {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            numeric: numeric.to_vec(),
            optional: Vec::new(),
        }
    }

    /// Lets these columns go, in this order, when the terminal is too narrow for all.
    pub fn optional(mut self, columns: &[usize]) -> Table {
        self.optional = columns.to_vec();
        self
    }

    /// Adds a row; its cells are made [`printable`] (a cell may hold a tag or a host name from
    /// an imported file).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(
            cells
                .into_iter()
                .map(|c| printable(&c).into_owned())
                .collect(),
        );
    }
}

/// One part of what is said.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A line (or lines) of text.
    Text(String),
    /// A table.
    Table(Table),
}

/// Text and tables in order.
pub type Doc = Vec<Block>;

/// Whether a character would act on a terminal instead of being shown: C0 and C1 controls (escape
/// sequences, carriage return, backspace, NUL), DEL, and the bidirectional controls that reorder
/// what a reader sees (Trojan Source). A line end is text.
fn acts(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` safe to show on a terminal: every character that would act on it ([`acts`]) written as
/// an escape (`\u{1b}`, `\r`, `\u{202e}`), so text from an imported file, a tag or a host name
/// is seen as it is and cannot move the cursor, rewrite a line or reorder it. Idempotent.
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(acts) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if acts(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// [`printable`] on one line: a line break is escaped too (`\n`), so a field from an imported
/// file (a host name, a tag) cannot start a line of its own in a row-per-line format (CSV).
pub fn one_line(s: &str) -> std::borrow::Cow<'_, str> {
    match printable(s) {
        p if p.contains('\n') => std::borrow::Cow::Owned(p.replace('\n', "\\n")),
        p => p,
    }
}

/// `s` without the spaces that end its lines (a table pads its last column; pasted into an
/// issue or a diff, they show), also where colour codes follow them (a coloured status cell is
/// padded inside its colour): the codes are kept, the spaces go.
pub fn trim_line_ends(s: &str) -> std::borrow::Cow<'_, str> {
    let trimmed = |l: &str| {
        let (body, codes) = line_end(l);
        format!("{body}{codes}")
    };
    if !s.lines().any(|l| trimmed(l).len() != l.len()) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out: String = s.lines().map(trimmed).collect::<Vec<_>>().join("\n");
    if s.ends_with('\n') {
        out.push('\n');
    }
    std::borrow::Cow::Owned(out)
}

/// `line` split before its tail of spaces and colour codes (SGR, `ESC [ digits ; m`): the text,
/// and the tail's codes without its spaces.
fn line_end(line: &str) -> (&str, String) {
    let mut end = line.len();
    let mut codes = Vec::new();
    loop {
        let t = &line[..end];
        if t.ends_with(' ') {
            end = t.trim_end_matches(' ').len();
            continue;
        }
        let code = t.strip_suffix('m').and_then(|s| {
            let i = s.rfind("\x1b[")?;
            s[i + 2..]
                .chars()
                .all(|c| c.is_ascii_digit() || c == ';')
                .then_some(i)
        });
        match code {
            Some(i) => {
                codes.push(&t[i..]);
                end = i;
            }
            None => break,
        }
    }
    codes.reverse();
    (&line[..end], codes.concat())
}

/// `word` as one shell word (POSIX sh, bash): as it is when it holds only characters no shell
/// reads specially, else in single quotes (a quote inside closed, escaped and reopened).
pub fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The one kind of escape sequence oslab itself writes: a foreground colour of its tables'
/// status words (`ESC[38;5;Nm`) and its end (`ESC[39m`). Their length in bytes at `s`'s start, if
/// `s` starts with one.
fn colour_at(s: &str) -> Option<usize> {
    let rest = s.strip_prefix("\u{1b}[")?;
    if rest.starts_with("39m") {
        return Some(5);
    }
    let digits = rest.strip_prefix("38;5;")?;
    let n = digits.bytes().take_while(u8::is_ascii_digit).count();
    (1..=3).contains(&n).then_some(())?;
    digits[n..].starts_with('m').then_some(2 + 5 + n + 1)
}

/// Rendered text made safe for a terminal as the last step before it is printed: what
/// [`printable`] does, except that the colours oslab's tables put on their status words (and
/// nothing else) stay colours. Outside text is made printable where it enters a table; this
/// is the guard for any that reached a line of text directly.
pub fn for_terminal(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(acts) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if let Some(n) = colour_at(rest) {
            out.push_str(&rest[..n]);
            rest = &rest[n..];
            continue;
        }
        if acts(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    std::borrow::Cow::Owned(out)
}

/// How many columns `s` takes on a terminal: its characters, not counting the colours
/// [`for_terminal`] keeps.
pub fn visible_width(s: &str) -> usize {
    let mut n = 0;
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        match colour_at(rest) {
            Some(len) => rest = &rest[len..],
            None => {
                n += 1;
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    n
}

/// A message for a person that may quote outside text: [`printable`], every word longer than
/// 200 characters cut to its first 60 ([`shortened`]: a 10 MB argument is quoted by its start and
/// length, and the explanation after it survives), and at most `max` characters in all.
pub fn message(s: &str, max: usize) -> String {
    let shown = printable(s);
    let mut out = String::with_capacity(shown.len().min(max + 64));
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.chars().count() > 200 {
            out.push_str(&shortened(word, 60));
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in shown.chars() {
        if c.is_whitespace() {
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    shortened(&out, max)
}

/// An error's message and its causes, each said once: a cause whose text the message already
/// holds (a library error that quotes SQLite's, then SQLite's itself) is not repeated.
pub fn once_each(causes: impl IntoIterator<Item = String>) -> String {
    let mut text = String::new();
    for cause in causes {
        if text.is_empty() {
            text = cause;
        } else if !text.contains(&cause) {
            text = format!("{text}: {cause}");
        }
    }
    text
}

/// What someone typed, short enough to repeat: beyond `max` characters, the first `max` and how
/// many there were (a 100k-character argument is not echoed or stored whole).
pub fn shortened(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((cut, _)) => format!("{}... ({} characters)", &s[..cut], s.chars().count()),
        None => s.to_string(),
    }
}

/// `text` with every line wider than `width` columns ([`visible_width`]: colours take none)
/// broken at spaces; a continuation is indented two more than its line. A word longer than the
/// width stays whole.
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if visible_width(body) <= width {
            out.push_str(line);
            continue;
        }
        let indent = body.len() - body.trim_start().len();
        let pad = " ".repeat(indent + 2);
        let mut current = body[..indent].to_string();
        let mut fresh = true;
        for word in body[indent..].split(' ') {
            let len = visible_width(&current);
            if !fresh && len + 1 + visible_width(word) > width {
                out.push_str(current.trim_end());
                out.push('\n');
                current = pad.clone();
                fresh = true;
            }
            if !fresh {
                current.push(' ');
            }
            current.push_str(word);
            fresh = false;
        }
        out.push_str(current.trim_end());
        out.push_str(end);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_ends_lose_their_spaces_inside_a_colour_too() {
        // A padded last column, and a coloured status cell padded inside its colour.
        let table = "a  b   \n ok \x1b[38;5;3m noisy  \x1b[39m\nplain\x1b[0m\n";
        assert_eq!(
            trim_line_ends(table),
            "a  b\n ok \x1b[38;5;3m noisy\x1b[39m\nplain\x1b[0m\n"
        );
        assert!(matches!(
            trim_line_ends("clean\nlines\n"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn a_cause_the_message_already_quotes_is_not_repeated() {
        let full = "database or disk is full".to_string();
        let said = |m: &str| once_each([m.to_string(), full.clone()]);
        assert_eq!(
            said("result store error: database or disk is full"),
            "result store error: database or disk is full"
        );
        assert_eq!(
            said("cannot store run 3"),
            "cannot store run 3: database or disk is full"
        );
    }

    #[test]
    fn text_from_outside_cannot_act_on_a_terminal() {
        let hostile = "tag\u{1b}]0;owned\u{7}\r\u{0}\u{202e}cba\u{9b}31m";
        let shown = printable(hostile);
        assert!(!shown.chars().any(acts), "{shown}");
        assert_eq!(
            shown,
            "tag\\u{1b}]0;owned\\u{7}\\r\\u{0}\\u{202e}cba\\u{9b}31m"
        );
        assert_eq!(printable(&shown), shown, "idempotent");
        assert!(matches!(
            printable("plain µs\nline"),
            std::borrow::Cow::Borrowed(_)
        ));
        let mut t = Table::new(&["tag"], &[]);
        t.row(vec!["a\u{1b}[2Jb".into()]);
        assert_eq!(t.rows[0][0], "a\\u{1b}[2Jb");
        let coloured = "\u{1b}[38;5;11m noisy \u{1b}[39m";
        assert_eq!(for_terminal(coloured), coloured);
        assert_eq!(visible_width(coloured), 7);
        assert_eq!(
            for_terminal("\u{1b}[2J\u{1b}[38;5;1234m\u{1b}[38;5;9m"),
            "\\u{1b}[2J\\u{1b}[38;5;1234m\u{1b}[38;5;9m"
        );
        assert_eq!(
            wrap(&format!("ab {coloured}"), 10),
            format!("ab {coloured}")
        );
        let long = "\u{1b}".repeat(10_000_000);
        assert!(message(&long, 100).len() < 1000);
    }

    #[test]
    fn long_lines_break_at_spaces_and_short_ones_stay() {
        let text = "short\n  a line of several words that is far too long\nend";
        let wrapped = wrap(text, 20);
        assert!(
            wrapped.lines().all(|l| l.chars().count() <= 20),
            "{wrapped}"
        );
        assert_eq!(
            wrapped,
            "short\n  a line of several\n    words that is\n    far too long\nend"
        );
        assert_eq!(
            wrap("averyveryverylongword x", 5),
            "averyveryverylongword\n  x"
        );
    }
}
