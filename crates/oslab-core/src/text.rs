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

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
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

/// What someone typed, short enough to repeat: beyond `max` characters, the first `max` and how
/// many there were (a 100k-character argument is not echoed or stored whole).
pub fn shortened(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((cut, _)) => format!("{}... ({} characters)", &s[..cut], s.chars().count()),
        None => s.to_string(),
    }
}

/// `text` with every line longer than `width` characters broken at spaces; a continuation is
/// indented two more than its line. A word longer than the width stays whole.
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if body.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        let indent = body.len() - body.trim_start().len();
        let pad = " ".repeat(indent + 2);
        let mut current = body[..indent].to_string();
        let mut fresh = true;
        for word in body[indent..].split(' ') {
            let len = current.chars().count();
            if !fresh && len + 1 + word.chars().count() > width {
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
