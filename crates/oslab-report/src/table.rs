//! The terminal's table primitives: the one style, the one width tables and text fit, cells
//! (sanitised, coloured last), rendering `core::text` tables and documents, a measurement's
//! `vs model` cell. The views built from them are in [`crate::views`].

use comfy_table::{
    Cell, CellAlignment, ColumnConstraint, ContentArrangement, LineStyle, Table, TableStyle, Width,
};
use std::io::IsTerminal;
use std::sync::OnceLock;

/// A rule under the header and nothing else: easy to read, easy to grep.
const STYLE: TableStyle =
    TableStyle::new().header_separator(LineStyle::none().fill('─').junction(' '));
use oslab_core::model::Measurement;

static WIDTH: OnceLock<Option<u16>> = OnceLock::new();

/// Makes every table fit `columns` characters (None: as wide as its content, e.g. `--wide`).
/// Without a call, tables fit `$COLUMNS`, else the terminal when standard output is one, else
/// [`PIPED_WIDTH`].
pub fn set_width(columns: Option<u16>) {
    let _ = WIDTH.set(columns);
}

/// The width of text sent to a file or a pipe without `$COLUMNS`: wide enough for every table,
/// narrow enough to read in a log (`--wide` for lines as long as their content).
pub const PIPED_WIDTH: u16 = 120;

/// The width of a terminal that reports none.
pub const UNSIZED_TERMINAL_WIDTH: u16 = 80;

/// The narrowest width tables and text are laid out in: a table's numbers and names need it.
pub const MIN_WIDTH: u16 = 40;

/// The width tables and text fit: see [`set_width`].
pub fn width() -> Option<u16> {
    *WIDTH.get_or_init(|| {
        // COLUMNS=0 says nothing; one narrower than MIN_WIDTH laid out a word a line (`show`
        // in 711 lines): it gets MIN_WIDTH.
        let columns = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse::<u16>().ok())
            .filter(|&c| c > 0)
            .map(|c| c.max(MIN_WIDTH));
        // A terminal that reports no size (a pty `script` opens with none) is taken as the 80
        // columns terminals start at: its 0 laid every word on a line of its own.
        columns.or_else(|| match std::io::stdout().is_terminal() {
            true => Some(
                Table::new()
                    .width()
                    .filter(|&w| w > 0)
                    .unwrap_or(UNSIZED_TERMINAL_WIDTH)
                    .max(MIN_WIDTH),
            ),
            false => Some(PIPED_WIDTH),
        })
    })
}

pub(crate) fn new_table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(STYLE).set_header(header.iter().map(cell));
    // Colour only on a terminal (comfy-table's own check) that has colours (not TERM=dumb), and
    // never with NO_COLOR set.
    if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
        || std::env::var("TERM").is_ok_and(|t| t == "dumb")
    {
        t.force_no_tty();
    }
    match width() {
        // Text columns wrap to fit; numbers never do (see `right`).
        Some(w) => t
            .set_width(w)
            .set_content_arrangement(ContentArrangement::Dynamic),
        None => t.set_content_arrangement(ContentArrangement::Disabled),
    };
    // The first column names the row: it stays whole.
    whole(&mut t, &[0]);
    t
}

/// A cell of text that may come from outside (a tag, a host name, a field of an imported run):
/// made printable ([`oslab_core::text::printable`]) before it enters a table, so that its width
/// is measured on what is shown and the colours added after cannot be mistaken for it.
pub(crate) fn cell(text: impl AsRef<str>) -> Cell {
    Cell::new(oslab_core::text::printable(text.as_ref()))
}

/// Adds a row of [`cell`]s.
pub(crate) fn add(t: &mut Table, row: impl IntoIterator<Item = impl AsRef<str>>) {
    t.add_row(row.into_iter().map(cell).collect::<Vec<_>>());
}

/// A word that says how a result came out, coloured so that trouble stands out: warnings
/// (noisy, changed) yellow, failures and regressions red, improvements green, skips grey.
pub(crate) fn outcome_cell(word: &str) -> Cell {
    outcome_coloured(word, word)
}

/// `text` coloured as [`outcome_cell`] colours `word`.
pub(crate) fn outcome_coloured(word: &str, text: &str) -> Cell {
    use comfy_table::Color;
    // "noisy: spread" is coloured as "noisy"; a count of several ("1 noisy, 2 skipped") as its
    // gravest word.
    let words: Vec<&str> = word
        .split(':')
        .next()
        .unwrap_or(word)
        .split([' ', ','])
        .collect();
    let has = |w: &str| words.contains(&w);
    // The terminal's own palette colours (not the bright ones: bright yellow and green all but
    // vanish on a light background).
    let color = if has("failed") || has("REGRESSION") {
        Some(Color::DarkRed)
    } else if has("noisy") || has("changed") {
        Some(Color::DarkYellow)
    } else if has("better") {
        Some(Color::DarkGreen)
    } else if has("skipped") {
        Some(Color::DarkGrey)
    } else {
        None
    };
    let shown = cell(text);
    match color {
        Some(c) => shown.fg(c),
        None => shown,
    }
}

/// Keeps these columns on one line (names that must stay whole).
pub(crate) fn whole(t: &mut Table, cols: &[usize]) {
    for &c in cols {
        if let Some(col) = t.column_mut(c) {
            col.set_constraint(ColumnConstraint::ContentWidth);
        }
    }
}

/// The places in `header` of the columns `named`: a layout said by name holds when a column is
/// added or moved (a column added to `show --details --wide` once went misaligned, the counted
/// places no longer its).
pub(crate) fn places(header: &[&str], named: &[&str]) -> Vec<usize> {
    header
        .iter()
        .enumerate()
        .filter(|(_, h)| named.contains(h))
        .map(|(i, _)| i)
        .collect()
}

/// Aligns number columns right and keeps each on one line.
pub(crate) fn right(t: &mut Table, cols: &[usize]) {
    for &c in cols {
        if let Some(col) = t.column_mut(c) {
            col.set_cell_alignment(CellAlignment::Right);
            col.set_constraint(ColumnConstraint::ContentWidth);
        }
    }
}

/// A table of [`oslab_core::text`], in the terminal style of every oslab table. On a terminal
/// too narrow for all of it, its optional columns go first; then the columns after the first
/// stack into one, a line each; a text column wraps between words, never inside one.
pub fn render(table: &oslab_core::text::Table) -> String {
    let cells = |c: usize| {
        std::iter::once(&table.header[c])
            .chain(table.rows.iter().filter_map(move |r| r.get(c)))
            .map(String::as_str)
    };
    let mut keep: Vec<usize> = (0..table.header.len()).collect();
    let whole_fits = |keep: &[usize], w| fits(keep.iter().map(|&k| widest(cells(k))), w);
    // What the first column (the rows' names) has left when the others are whole.
    let first_room = |keep: &[usize], w: u16| {
        let others: usize = keep[1..].iter().map(|&k| widest(cells(k)) + 3).sum();
        (w as usize).saturating_sub(others + 3)
    };
    let longest_word = |c: usize| {
        cells(c)
            .flat_map(|s| s.split_whitespace())
            .map(|w| w.chars().count())
            .max()
            .unwrap_or(0)
    };
    if let Some(w) = width() {
        for c in &table.optional {
            if whole_fits(&keep, w) {
                break;
            }
            keep.retain(|k| k != c);
        }
        // Names wrap onto a second line before a row's cells go one under another: a row stays
        // a row, its trust beside its number, at 80 columns.
        if keep.len() > 2
            && !whole_fits(&keep, w)
            && first_room(&keep, w) < longest_word(keep[0]).max(MIN_NAME)
        {
            return render_stacked(table, &keep);
        }
    }
    let header: Vec<&str> = keep.iter().map(|&c| table.header[c].as_str()).collect();
    let mut t = new_table(&header);
    for r in &table.rows {
        // Status and verdict words are coloured on a terminal, as in every oslab table.
        t.add_row(keep.iter().map(|&c| {
            let v = r.get(c).cloned().unwrap_or_default();
            match table.header[c].as_str() {
                "status" | "verdict" => outcome_cell(&v),
                _ => cell(v),
            }
        }));
    }
    let at = |c: &usize| keep.iter().position(|k| k == c);
    right(
        &mut t,
        &table.numeric.iter().filter_map(at).collect::<Vec<_>>(),
    );
    // What fits whole is shown whole: comfy-table's own arrangement once broke "contention" in
    // a column that had the room (a 100-column terminal).
    if width().is_none_or(|w| whole_fits(&keep, w)) {
        whole(&mut t, &(0..keep.len()).collect::<Vec<_>>());
        return t.to_string();
    }
    let w = width().unwrap_or(u16::MAX);
    let room = first_room(&keep, w);
    if keep.len() > 2 && room >= longest_word(keep[0]).max(MIN_NAME) {
        // The others whole, the names wrapped into what they leave (a constraint counts the
        // padding too).
        whole(&mut t, &(1..keep.len()).collect::<Vec<_>>());
        if let Some(col) = t.column_mut(0) {
            col.set_constraint(ColumnConstraint::UpperBoundary(Width::Fixed(
                (room + 2).min(u16::MAX as usize) as u16,
            )));
        }
        return t.to_string();
    }
    for (i, &c) in keep.iter().enumerate().skip(1) {
        if table.numeric.contains(&c) {
            continue;
        }
        if let Some(col) = t.column_mut(i) {
            col.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(
                longest_word(c) as u16,
            )));
        }
    }
    t.to_string()
}

/// The narrowest the first column of a table wraps to before its rows are stacked instead.
const MIN_NAME: usize = 16;

/// The `keep` columns of `table` in two: the first, and the others stacked in one, a line each.
fn render_stacked(table: &oslab_core::text::Table, keep: &[usize]) -> String {
    let (first, rest) = (keep[0], &keep[1..]);
    let stack = |cells: &[String]| -> String {
        rest.iter()
            .map(|&c| cells.get(c).map_or("", String::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut t = new_table(&[table.header[first].as_str(), &stack(&table.header)]);
    let mut stacks = vec![stack(&table.header)];
    for r in &table.rows {
        stacks.push(stack(r));
        add(
            &mut t,
            [r.get(first).cloned().unwrap_or_default(), stack(r)],
        );
    }
    right(&mut t, &[1]);
    // The numbers stay whole: the first column wraps into what they leave (between words).
    if let (Some(w), Some(col)) = (width(), t.column_mut(0)) {
        let left = (w as usize).saturating_sub(widest(stacks.iter().map(String::as_str)) + 6);
        col.set_constraint(ColumnConstraint::UpperBoundary(Width::Fixed(
            left.max(8) as u16
        )));
    }
    t.to_string()
}

/// Lines and tables, in order, tables indented under their text.
pub fn doc(blocks: &[oslab_core::text::Block]) -> String {
    use oslab_core::text::Block;
    let mut out = String::new();
    for b in blocks {
        match b {
            Block::Text(s) => out.push_str(s),
            Block::Table(t) => {
                for line in render(t).lines() {
                    out.push_str("  ");
                    out.push_str(line.trim_end());
                    out.push('\n');
                }
            }
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Measured over predicted, e.g. "0.96x", with "!" when the gap is more than 2x (explained after
/// the table); empty without a prediction.
pub(crate) fn versus(m: &Measurement) -> String {
    let Some(e) = m.efficiency() else {
        return String::new();
    };
    let far = m.far_from_model();
    let e = if e.abs() >= 10.0 {
        format!("{e:.0}x")
    } else {
        format!("{e:.2}x")
    };
    if far {
        format!("{e}!")
    } else {
        e
    }
}

/// Whether columns of these content widths fit `width` (each with its padding and gap).
pub(crate) fn fits(widths: impl Iterator<Item = usize>, width: u16) -> bool {
    widths.map(|w| w + 3).sum::<usize>() <= width as usize
}

/// Display width of the widest line among `cells`.
pub(crate) fn widest<'a>(cells: impl Iterator<Item = &'a str>) -> usize {
    cells
        .flat_map(str::lines)
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
}
