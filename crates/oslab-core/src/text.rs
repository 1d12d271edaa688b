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
}

impl Table {
    /// An empty table with these columns, of which `numeric` hold numbers.
    pub fn new(header: &[&str], numeric: &[usize]) -> Table {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            numeric: numeric.to_vec(),
        }
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
