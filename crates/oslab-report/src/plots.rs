//! Charts as SVG text (plotters' SVG backend): lines over a log axis, bars, a heatmap and a
//! timeline. Each function returns a complete `<svg>` element to inline in a report, or an error
//! text when there is nothing to draw.

oslab_core::reason! {
    /// Why a chart could not be drawn (plotters' error, or values no chart can show).
    PlotError
}

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Width and height of a line chart, in pixels: about the width it is shown at in the report's
/// column (570 px at 1,280), so its text reads near the size it is set in (drawn 1,100 wide, the
/// 11-12 px labels were shown at 5-6 px). plotters sets text at 0.8 of the size asked: [`TEXT`]
/// is 16, 12.9 px drawn, 11.5 px shown.
const SIZE: (u32, u32) = (640, 320);

/// Width of the band right of a line chart's plot that holds its legend, so no legend sits
/// over the data.
const LEGEND: u32 = 220;

/// The size of a chart's labels, ticks and legend (see [`SIZE`]).
const TEXT: u32 = 16;

/// Distinct colours for series.
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
    RGBColor(140, 86, 75),
    RGBColor(127, 127, 127),
];

/// The names of [`PALETTE`]'s colours, in its order, for captions that say which run is which.
pub const COLOUR_NAMES: [&str; 8] = [
    "blue", "red", "green", "purple", "orange", "cyan", "brown", "grey",
];

/// A named series of (x, y) points.
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points, any order (sorted by x when drawn).
    pub points: Vec<(f64, f64)>,
    /// Which of several overlaid runs it belongs to (a run is then a colour, and the series of
    /// one run are told apart by their dashes); 0 alone.
    pub side: usize,
}

/// The name prefix of a series that is a model's prediction of another: drawn dashed, in the
/// colour of the series named after the prefix.
pub const MODEL: &str = "model: ";

/// A vertical marker on the x axis (e.g. a cache size), or a band between two places (where
/// sysfs puts a cache and where the latency curve shows it).
pub struct Mark {
    /// Where.
    pub x: f64,
    /// The band's other end, when it is one.
    pub to: Option<f64>,
    /// A short tag drawn at the top of the line or band (`L2`).
    pub tag: String,
    /// What it is in full, listed under the legend (`L2: 1 MiB (sysfs), 768 KiB seen`).
    pub label: String,
}

fn draw(
    f: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), PlotError>,
) -> Result<String, PlotError> {
    draw_sized(SIZE, f)
}

fn draw_sized(
    size: (u32, u32),
    f: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), PlotError>,
) -> Result<String, PlotError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        f(&root)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

fn err(e: impl std::fmt::Display) -> PlotError {
    PlotError(e.to_string())
}

/// An axis value as people write it: `250000`, `10`, `2.5`, `0.8`, never `250000.0` or `0.8000`.
fn plain(v: f64) -> String {
    if v == v.round() {
        format!("{v:.0}")
    } else {
        let n = oslab_core::units::num(v);
        n.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// What the x axis of a line chart counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum XAxis {
    /// Sizes in bytes: a base-2 logarithmic axis, ticks at powers of two labelled 4 KiB, 1 MiB.
    Bytes,
    /// Things counted (threads): a linear axis, ticks at whole numbers.
    Count,
}

impl XAxis {
    /// Where a value sits on the axis.
    fn place(self, x: f64) -> f64 {
        match self {
            XAxis::Bytes => x.log2(),
            XAxis::Count => x,
        }
    }

    /// Whole-number tick positions (in placed units) over [lo, hi], at most about ten: how many
    /// labels the axis asks for.
    pub fn ticks(self, lo: f64, hi: f64) -> Vec<f64> {
        let (first, last) = (lo.ceil() as i64, hi.floor() as i64);
        let span = (last - first).max(1);
        let step = (1..).find(|s| span / s <= 10).unwrap_or(1);
        (first..=last)
            .step_by(step as usize)
            .map(|v| v as f64)
            .collect()
    }

    /// A tick's label; none off the whole numbers (a power of two, a count).
    pub fn label(self, placed: f64) -> String {
        if (placed - placed.round()).abs() > 1e-9 {
            return String::new();
        }
        match self {
            XAxis::Bytes => oslab_core::units::bytes(placed.exp2().round() as u64),
            XAxis::Count => format!("{placed:.0}"),
        }
    }
}

/// Marks placed on the axis (one beyond an end at that end, where its tag is drawn), sorted,
/// each with the row its tag takes: the first row where no tag within the tag's own width (about
/// a fortieth of the axis a character) already is, at most six rows. Full labels are listed under
/// the legend: on the plot, 16-20 character labels of seven marks ran over each other.
fn label_rows(marks: &[Mark], x_axis: XAxis, (lo, hi): (f64, f64)) -> Vec<(Mark, usize)> {
    let span = hi - lo;
    let mut placed: Vec<Mark> = marks
        .iter()
        .map(|m| Mark {
            x: x_axis.place(m.x).clamp(lo, hi),
            to: m.to.map(|t| x_axis.place(t).clamp(lo, hi)),
            tag: m.tag.clone(),
            label: m.label.clone(),
        })
        .collect();
    placed.sort_by(|a, b| a.x.total_cmp(&b.x));
    let mut last_in_row: Vec<f64> = Vec::new();
    placed
        .into_iter()
        .map(|m| {
            // A tag of a few characters takes about 1/40 of a 420 px plot per character.
            let room = span * (m.tag.chars().count() as f64 + 1.0) / 40.0;
            let row = last_in_row
                .iter()
                .position(|&x| m.x - x >= room)
                .unwrap_or(last_in_row.len())
                .min(5);
            if row == last_in_row.len() {
                last_in_row.push(m.x);
            } else {
                last_in_row[row] = m.x;
            }
            (m, row)
        })
        .collect()
}

/// Lines over x (sizes on a power-of-two axis, or counts), y linear or logarithmic, with
/// vertical marks.
pub fn lines(
    title: &str,
    x_axis: XAxis,
    (x_desc, y_desc): (&str, &str),
    series: &[Series],
    marks: &[Mark],
    log_y: bool,
) -> Result<String, PlotError> {
    // Two points make a line that says nothing a table does not: a curve needs three.
    if series.iter().all(|s| s.points.len() < 3) {
        return Err("fewer than 3 points: the table shows them".into());
    }
    let pts = || {
        series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|p| p.0 > 0.0 && p.1 > 0.0)
            .map(|p| (x_axis.place(p.0), p.1))
    };
    let (xmin, xmax) = pts().fold((f64::MAX, f64::MIN), |a, p| (a.0.min(p.0), a.1.max(p.0)));
    let (ymin, ymax) = pts().fold((f64::MAX, f64::MIN), |a, p| (a.0.min(p.1), a.1.max(p.1)));
    if xmin >= xmax {
        return Err("not enough points to draw".into());
    }
    drawable(&[xmin, xmax, ymin, ymax])?;
    let ymax = if ymax > ymin { ymax } else { ymin * 2.0 };
    // A log axis needs a decade to label more than one tick (loaded latency from 100 to 460
    // ns read "1" alone): under one, the axis is linear.
    let log_y = log_y && ymax / ymin >= 10.0;
    // Labels of marks close together go one row lower each, so they never overlap.
    let label_y = |row: usize| {
        if log_y {
            ymax / 1.45f64.powi(row as i32)
        } else {
            ymax * (1.0 - 0.07 * row as f64)
        }
    };
    let span = xmax - xmin;
    // At most six labelled sizes (eight ran together on the plot's 290 px): the others stay
    // unlabelled marks. Counts are short enough to label each.
    let ticks = x_axis.ticks(xmin, xmax);
    let every = match x_axis {
        XAxis::Bytes => ticks.len().div_ceil(6) as i64,
        XAxis::Count => 1,
    };
    let step = match ticks.as_slice() {
        [a, b, ..] => (b - a).round() as i64,
        _ => 1,
    };
    let first = ticks.first().copied().unwrap_or(0.0).round() as i64;
    let labelled = |x: f64| (x.round() as i64 - first).rem_euclid(step * every) == 0;
    draw(|root| {
        // The title over the whole width, legend band included: over the plot alone a long
        // one ("loaded latency: latency vs the other cpus' memory traffic") was cut at both ends.
        let body = root.titled(title, ("sans-serif", 20)).map_err(err)?;
        let (plot, legend) = body.split_horizontally(SIZE.0 - LEGEND);
        draw_legend(&legend, series, marks)?;
        let mut builder = ChartBuilder::on(&plot);
        builder
            .margin(12)
            .margin_right(28)
            .x_label_area_size(40)
            .y_label_area_size(60);
        macro_rules! body {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .label_style(("sans-serif", TEXT))
                    .axis_desc_style(("sans-serif", TEXT))
                    .x_desc(x_desc)
                    .y_desc(y_desc)
                    .x_labels(ticks.len())
                    .x_label_formatter(&|x| match labelled(*x) {
                        true => x_axis.label(*x),
                        false => String::new(),
                    })
                    .y_label_formatter(&|y| plain(*y))
                    .draw()
                    .map_err(err)?;
                for (m, row) in label_rows(marks, x_axis, (xmin, xmax)) {
                    let style = ShapeStyle::from(&BLACK.mix(0.35)).stroke_width(1);
                    let ends = [Some(m.x), m.to].into_iter().flatten();
                    for x in ends {
                        chart
                            .draw_series(std::iter::once(PathElement::new(
                                vec![(x, ymin), (x, ymax)],
                                style,
                            )))
                            .map_err(err)?;
                    }
                    if let Some(to) = m.to {
                        chart
                            .draw_series(std::iter::once(Rectangle::new(
                                [(m.x.min(to), ymin), (m.x.max(to), ymax)],
                                BLACK.mix(0.07).filled(),
                            )))
                            .map_err(err)?;
                    }
                    // Near the right end a tag runs leftwards from its line, not off the chart.
                    let right = m.x > xmin + span * 0.9;
                    let font = ("sans-serif", TEXT).into_font().into_text_style(root);
                    let font = if right {
                        font.pos(Pos::new(HPos::Right, VPos::Top))
                    } else {
                        font
                    };
                    chart
                        .draw_series(std::iter::once(Text::new(
                            m.tag.clone(),
                            (m.x, label_y(row)),
                            font,
                        )))
                        .map_err(err)?;
                }
                // A model's line ("model: NAME") is dashed, in the colour of the series it models;
                // overlaid runs are a colour each, their series a dash pattern each.
                for s in series {
                    let modelled = s.name.strip_prefix(MODEL);
                    let (color, dash) = style_of(series, s);
                    let mut p: Vec<(f64, f64)> = s
                        .points
                        .iter()
                        .copied()
                        .filter(|p| p.0 > 0.0 && p.1 > 0.0)
                        .map(|p| (x_axis.place(p.0), p.1))
                        .collect();
                    p.sort_by(|a, b| a.0.total_cmp(&b.0));
                    if modelled.is_some() {
                        chart
                            .draw_series(DashedLineSeries::new(p, 6, 4, color.stroke_width(1)))
                            .map_err(err)?;
                        continue;
                    }
                    match dash {
                        Some((on, off)) => chart
                            .draw_series(DashedLineSeries::new(
                                p.clone(),
                                on,
                                off,
                                color.stroke_width(2),
                            ))
                            .map_err(err)?,
                        None => chart
                            .draw_series(LineSeries::new(p.clone(), color.stroke_width(2)))
                            .map_err(err)?,
                    };
                    chart
                        .draw_series(p.into_iter().map(|pt| Circle::new(pt, 2, color.filled())))
                        .map_err(err)?;
                }
            }};
        }
        let x = xmin..xmax;
        if log_y {
            body!(builder
                .build_cartesian_2d(x, (ymin * 0.8..ymax * 1.25).log_scale())
                .map_err(err)?);
        } else {
            body!(builder
                .build_cartesian_2d(x, 0.0..ymax * 1.1)
                .map_err(err)?);
        }
        Ok(())
    })
}

/// Dash patterns (on, off in pixels) that tell one run's series apart; the first is solid.
const DASHES: [Option<(u32, u32)>; 4] = [None, Some((8, 4)), Some((2, 3)), Some((12, 3))];

/// How series `s` among `series` is drawn: its colour and dash. Alone, a colour per series; with
/// overlaid runs (a side above 0), a colour per run and a dash per series within its run, so the
/// same series of two runs differ only in colour.
fn style_of(series: &[Series], s: &Series) -> (RGBColor, Option<(u32, u32)>) {
    if !series.iter().any(|x| x.side > 0) {
        return (colour_of(series, s), None);
    }
    let k = series
        .iter()
        .filter(|x| x.side == s.side)
        .position(|x| std::ptr::eq(x, s))
        .unwrap_or(0);
    (PALETTE[s.side % PALETTE.len()], DASHES[k % DASHES.len()])
}

/// The colour of series `s` among `series`: a model's line takes its measured series' colour.
fn colour_of(series: &[Series], s: &Series) -> RGBColor {
    let measured: Vec<&Series> = series
        .iter()
        .filter(|m| !m.name.starts_with(MODEL))
        .collect();
    let modelled = s.name.strip_prefix(MODEL);
    let i = measured
        .iter()
        .position(|m| Some(m.name.as_str()) == modelled || m.name == s.name)
        .unwrap_or(measured.len());
    PALETTE[i % PALETTE.len()]
}

/// The legend in its own band: a line sample (dashed for a model) and the name of each series.
/// The legend: a sample and name of each series, then what each mark's tag stands for.
fn draw_legend(
    area: &DrawingArea<SVGBackend, Shift>,
    series: &[Series],
    marks: &[Mark],
) -> Result<(), PlotError> {
    let mut y = 50 + 22 * series.len() as i32 + 8;
    for m in marks {
        for line in m.label.lines() {
            area.draw(&Text::new(
                line.to_string(),
                (6, y - 6),
                ("sans-serif", TEXT - 2).into_font(),
            ))
            .map_err(err)?;
            y += 18;
        }
    }
    for (k, s) in series.iter().enumerate() {
        let y = 50 + 22 * k as i32;
        let (color, dash) = style_of(series, s);
        let model = s.name.starts_with(MODEL);
        // A sample of the line: a model's dashed thin, a run's series in its dash.
        let (on, off, width) = match (model, dash) {
            (true, _) => (6, 4, 1),
            (false, Some((on, off))) => (on as i32, off as i32, 2),
            (false, None) => (18, 0, 2),
        };
        let mut x = 4;
        while x < 22 {
            let end = (x + on).min(22);
            area.draw(&PathElement::new(
                vec![(x, y), (end, y)],
                color.stroke_width(width),
            ))
            .map_err(err)?;
            x = end + off.max(1);
        }
        let mut name = s.name.clone();
        if name.chars().count() > 26 {
            name = name.chars().take(25).collect::<String>() + "…";
        }
        area.draw(&Text::new(
            name,
            (28, y - 6),
            ("sans-serif", TEXT).into_font(),
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// The largest (and, above zero, the smallest) magnitude an axis is drawn over: beyond it a
/// range overflows to infinity or falls to subnormals, and a log axis never ends (a schema-valid
/// run of extreme figures hung the report).
const DRAWABLE: f64 = 1e30;

/// Whether values can be placed on an axis ([`DRAWABLE`]); why not, as an error.
fn drawable(values: &[f64]) -> Result<(), PlotError> {
    match values
        .iter()
        .all(|v| v.is_finite() && (*v == 0.0 || (1.0 / DRAWABLE..=DRAWABLE).contains(&v.abs())))
    {
        true => Ok(()),
        false => Err("values beyond what a chart can place (the table shows them)".into()),
    }
}

/// A linear time axis's unit for values in ns: the largest unit in which a tenth of the largest
/// value is at least 1, so ticks read 10 µs, not 10000 ns.
fn time_unit(values: impl Iterator<Item = f64>) -> (f64, &'static str) {
    let pick = values
        .filter(|v| *v > 0.0 && v.is_finite())
        .fold(0.0, f64::max)
        / 10.0;
    [(1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns")]
        .into_iter()
        .find(|(d, _)| pick >= *d)
        .unwrap_or((1.0, "ns"))
}

/// One bar: label, value, and an interval drawn as a whisker.
#[derive(Clone)]
pub struct Bar {
    /// Label under the bar.
    pub label: String,
    /// Height.
    pub value: f64,
    /// Whisker (low, high), e.g. the CI95.
    pub interval: Option<(f64, f64)>,
    /// Which of several overlaid runs it belongs to (bars are then coloured by run); 0 alone.
    pub side: usize,
}

/// Horizontal bars with whiskers, labelled at their left in full and valued at their end, the
/// first at the top; as tall as the bars need; the axis linear from zero. An axis of times (`x_desc` starting with "ns") takes the unit its
/// values read best in.
pub fn bars(title: &str, x_desc: &str, bars: &[Bar]) -> Result<String, PlotError> {
    if bars.is_empty() {
        return Err("no bars to draw".into());
    }
    let ends = || {
        bars.iter()
            .flat_map(|b| {
                [
                    Some(b.value),
                    b.interval.map(|i| i.0),
                    b.interval.map(|i| i.1),
                ]
            })
            .flatten()
    };
    // Bars stand on zero, on a linear axis: a bar's length is its value (on a log axis 44 and
    // 82 GB/s looked alike, and one low interval end stretched the axis by a decade). Values
    // over orders of magnitude are a sweep's, drawn as lines. The axis is the bars': a whisker
    // reaching past twice the longest bar is cut at the axis's end and marked so (one interval
    // to 1,800 µs had made bars of 21-60 µs slivers).
    let longest = bars.iter().map(|b| b.value).fold(0.0, f64::max);
    let top = ends().fold(0.0, f64::max).min(2.0 * longest).max(longest);
    let (div, x_desc) = match x_desc.strip_prefix("ns") {
        Some(rest) => {
            let (d, u) = time_unit(ends());
            (d, format!("{u}{rest}"))
        }
        None => (1.0, x_desc.to_string()),
    };
    let top = top / div * 1.25;
    drawable(&[top])?;
    let floor = 0.0;
    let n = bars.len() as u32;
    let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
    let widest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(1);
    let label_area = (widest as u32 * 8 + 16).clamp(60, 300);
    // Two bars' height at least: one bar's chart had no room for its axis's numbers.
    let height = 110 + 26 * n.max(2);
    // Bar i fills [n-1-i, n-i] of a 0..n axis: the first at the top, labels at the centres.
    let slot = |i: usize| (n - 1 - i as u32) as f64;
    let from_top: Vec<String> = labels.iter().rev().cloned().collect();
    let overlaid = bars.iter().any(|b| b.side > 0);
    draw_sized((SIZE.0, height), |root| {
        let mut builder = ChartBuilder::on(root);
        builder
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .margin_right(70)
            .x_label_area_size(40)
            .y_label_area_size(label_area);
        macro_rules! body {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .disable_y_mesh()
                    .y_labels(2 * n as usize + 1)
                    .y_label_style(("sans-serif", TEXT))
                    // Fixed sizes: plotters scales them with the chart's height, and the numbers
                    // of a short chart's axis were 5 px tall.
                    .x_label_style(("sans-serif", TEXT))
                    .axis_desc_style(("sans-serif", TEXT))
                    .y_label_formatter(&|y| label_at(&from_top, *y))
                    .x_desc(x_desc.as_str())
                    .x_label_formatter(&|x| plain(*x))
                    .draw()
                    .map_err(err)?;
                for (i, b) in bars.iter().enumerate() {
                    // One colour, unless the colours tell overlaid runs apart.
                    let color = PALETTE[if overlaid { b.side } else { 0 } % PALETTE.len()];
                    let at = slot(i);
                    let value = (b.value / div).max(floor);
                    chart
                        .draw_series(std::iter::once({
                            let mut r = Rectangle::new(
                                [(floor, at), (value, at + 1.0)],
                                color.mix(0.8).filled(),
                            );
                            r.set_margin(3, 3, 0, 0);
                            r
                        }))
                        .map_err(err)?;
                    if let Some((lo, hi)) = b.interval {
                        let end = top / 1.25;
                        let (lo, hi) = ((lo / div).max(floor), (hi / div).max(floor));
                        chart
                            .draw_series(std::iter::once(PathElement::new(
                                vec![(lo.min(end), at + 0.5), (hi.min(end), at + 0.5)],
                                BLACK.stroke_width(1),
                            )))
                            .map_err(err)?;
                        if hi > end {
                            // Cut: an arrowhead and where it reaches.
                            let reach = format!("▸ {}", oslab_core::units::num(hi));
                            chart
                                .draw_series(std::iter::once(
                                    EmptyElement::at((end, at + 0.5))
                                        + Text::new(
                                            reach,
                                            (0, 4),
                                            ("sans-serif", TEXT).into_font(),
                                        ),
                                ))
                                .map_err(err)?;
                        }
                    }
                    // The value at the bar's end, where the eye reads it.
                    let text = oslab_core::units::num(b.value / div);
                    chart
                        .draw_series(std::iter::once(
                            EmptyElement::at((value, at + 0.5))
                                + Text::new(text, (4, -13), ("sans-serif", TEXT).into_font()),
                        ))
                        .map_err(err)?;
                }
            }};
        }
        body!(builder
            .build_cartesian_2d(0.0..top.max(f64::MIN_POSITIVE), 0.0..n as f64)
            .map_err(err)?);
        Ok(())
    })
}

/// A heatmap of `values[row][col]` with the text of each cell drawn on it.
pub fn heatmap(
    title: &str,
    rows: &[String],
    cols: &[String],
    values: &[Vec<Option<f64>>],
    text: &dyn Fn(usize, usize, f64) -> String,
) -> Result<String, PlotError> {
    let all: Vec<f64> = values.iter().flatten().flatten().copied().collect();
    if all.is_empty() {
        return Err("no cells to draw".into());
    }
    let (lo, hi) = all
        .iter()
        .fold((f64::MAX, f64::MIN), |a, &v| (a.0.min(v), a.1.max(v)));
    drawable(&[lo, hi])?;
    let (nr, nc) = (rows.len(), cols.len());
    // Square cells as wide as the column allows, at most 72 px (a 2x2 matrix is not a page
    // wide), with a colour scale at the right.
    let scale_w = 110u32;
    let widest = rows.iter().map(|l| l.chars().count()).max().unwrap_or(1);
    let label_area = (widest as u32 * 8 + 16).clamp(50, 200);
    let cell = ((SIZE.0 - scale_w - label_area - 20) / nc.max(1) as u32).clamp(8, 72);
    let size = (
        label_area + 20 + cell * nc as u32 + scale_w,
        70 + cell * nr as u32,
    );
    // The first row at the top, as the terminal prints a matrix (it ran bottom-up here).
    let from_top: Vec<String> = rows.iter().rev().cloned().collect();
    let cell_px = cell as f64;
    draw_sized(size, |root| {
        let (plot, scale) = root.split_horizontally(size.0 - scale_w);
        draw_scale(&scale, lo, hi, text)?;
        let mut chart = ChartBuilder::on(&plot)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(label_area)
            .build_cartesian_2d(0.0..nc as f64, 0.0..nr as f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(nc * 2 + 1)
            .y_labels(nr * 2 + 1)
            .x_label_formatter(&|x| label_at(cols, *x))
            .y_label_formatter(&|y| label_at(&from_top, *y))
            .draw()
            .map_err(err)?;
        for (r, row) in values.iter().enumerate() {
            let y = (nr - 1 - r) as f64;
            for (c, v) in row.iter().enumerate() {
                let Some(v) = v else { continue };
                let t = shade(*v, lo, hi);
                let color = ViridisRGB::get_color(t);
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(c as f64, y), (c as f64 + 1.0, y + 1.0)],
                        color.filled(),
                    )))
                    .map_err(err)?;
                let ink = if t > 0.6 { BLACK } else { WHITE };
                // A number only where it fits its cell (16 cpus' numbers spilled into their
                // neighbours): the colour and the scale say the rest.
                let said = text(r, c, *v);
                if said.chars().count() as f64 * TEXT as f64 * 0.55 > cell_px {
                    continue;
                }
                chart
                    .draw_series(std::iter::once(Text::new(
                        said,
                        (c as f64 + 0.5, y + 0.5),
                        ("sans-serif", TEXT)
                            .into_font()
                            .color(&ink)
                            .pos(Pos::new(HPos::Center, VPos::Center)),
                    )))
                    .map_err(err)?;
            }
        }
        Ok(())
    })
}

/// Where `v` falls between `lo` and `hi` on a heatmap's colour scale (0 to 1): logarithmic for
/// positive values over more than 4x (a stride map of 0.9-14.5 ns read as one purple but for
/// its largest cells on a linear scale), else linear.
fn shade(v: f64, lo: f64, hi: f64) -> f64 {
    match (lo > 0.0, hi > lo) {
        (_, false) => 1.0,
        (true, true) if hi / lo > 4.0 => (v / lo).ln() / (hi / lo).ln(),
        _ => (v - lo) / (hi - lo),
    }
}

/// A heatmap's colour scale: the gradient from `lo` (bottom) to `hi` (top), labelled at both
/// ends with the cells' own text for those values.
fn draw_scale(
    area: &DrawingArea<SVGBackend, Shift>,
    lo: f64,
    hi: f64,
    text: &dyn Fn(usize, usize, f64) -> String,
) -> Result<(), PlotError> {
    let (_, h) = area.dim_in_pixel();
    let (top, bottom) = (40i32, h as i32 - 40);
    let label = |v: f64| {
        let t = text(usize::MAX, usize::MAX, v);
        // The cell text of a value, without a cell's own ratio in parentheses.
        t.split(" (").next().unwrap_or(&t).to_string()
    };
    if hi <= lo {
        // Every cell alike: one swatch, one value (a gradient would claim a range).
        area.draw(&Rectangle::new(
            [(10, top), (26, top + 16)],
            ViridisRGB::get_color(1.0).filled(),
        ))
        .map_err(err)?;
        return area
            .draw(&Text::new(
                label(hi),
                (30, top + 2),
                ("sans-serif", TEXT).into_font(),
            ))
            .map_err(err);
    }
    let steps = 24;
    for k in 0..steps {
        let t = 1.0 - k as f64 / (steps - 1) as f64;
        let y0 = top + (bottom - top) * k / steps;
        let y1 = top + (bottom - top) * (k + 1) / steps;
        area.draw(&Rectangle::new(
            [(10, y0), (26, y1)],
            ViridisRGB::get_color(t).filled(),
        ))
        .map_err(err)?;
    }
    area.draw(&Text::new(
        label(hi),
        (30, top - 6),
        ("sans-serif", TEXT).into_font(),
    ))
    .map_err(err)?;
    area.draw(&Text::new(
        label(lo),
        (30, bottom - 6),
        ("sans-serif", TEXT).into_font(),
    ))
    .map_err(err)?;
    // The middle of a logarithmic scale is the geometric mean, not the average: say it.
    let mid = (lo * hi).sqrt();
    if !(lo > 0.0 && (shade(mid, lo, hi) - 0.5).abs() < 0.01) {
        return Ok(());
    }
    area.draw(&Text::new(
        label(mid),
        (30, (top + bottom) / 2 - 6),
        ("sans-serif", TEXT).into_font(),
    ))
    .map_err(err)?;
    Ok(())
}

/// The label of the cell whose centre is at `x` (labels sit at k + 0.5).
fn label_at(labels: &[String], x: f64) -> String {
    let i = x.floor();
    if (x - i - 0.5).abs() < 0.01 && i >= 0.0 {
        labels.get(i as usize).cloned().unwrap_or_default()
    } else {
        String::new()
    }
}

/// One row of a timeline and its spans (start, duration, colour index).
pub struct Track {
    /// Row name.
    pub name: String,
    /// Spans in ns: (start, duration, colour index).
    pub spans: Vec<(f64, f64, usize)>,
}

/// Horizontal spans per track over `[0, end_ns]` (time in ms on the axis).
pub fn timeline(
    title: &str,
    tracks: &[Track],
    end_ns: f64,
    legend: &[&str],
) -> Result<String, PlotError> {
    if tracks.is_empty() || end_ns <= 0.0 || drawable(&[end_ns]).is_err() {
        return Err("no spans to draw".into());
    }
    let names: Vec<String> = tracks.iter().map(|t| t.name.clone()).collect();
    let n = tracks.len();
    draw(|root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(150)
            .build_cartesian_2d(0.0..end_ns / 1e6, 0.0..n as f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", TEXT))
            .axis_desc_style(("sans-serif", TEXT))
            .disable_y_mesh()
            .y_labels(n * 2 + 1)
            .y_label_formatter(&|y| label_at(&names, *y))
            .x_desc("time (ms)")
            .draw()
            .map_err(err)?;
        for (r, t) in tracks.iter().enumerate() {
            let rects = t
                .spans
                .iter()
                .filter(|s| s.0 < end_ns)
                .map(|&(start, dur, color)| {
                    let c = PALETTE[color % PALETTE.len()];
                    let end = (start + dur.max(end_ns / 2000.0)).min(end_ns);
                    Rectangle::new(
                        [(start / 1e6, r as f64 + 0.15), (end / 1e6, r as f64 + 0.85)],
                        c.filled(),
                    )
                });
            chart.draw_series(rects).map_err(err)?;
        }
        for (i, name) in legend.iter().enumerate() {
            let c = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, 0.0), (0.0, 0.0)],
                    c.filled(),
                )))
                .map_err(err)?
                .label(*name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 4), (x + 10, y + 4)], c.filled()));
        }
        if !legend.is_empty() {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.3))
                .draw()
                .map_err(err)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_of_marks_close_together_take_lower_rows() {
        let mark = |x: f64, label: &str| Mark {
            x,
            to: None,
            tag: label.into(),
            label: label.into(),
        };
        // 32 KiB and 48 KiB, then 2 MiB, 2.5 MiB and 3 MiB, on a 4 KiB .. 64 MiB axis.
        let marks = [
            mark(32768.0, "L1 seen"),
            mark(49152.0, "L1 (sysfs)"),
            mark(2097152.0, "L2 (sysfs)"),
            mark(2621440.0, "L2 seen"),
            mark(3145728.0, "L3 seen"),
        ];
        let rows: Vec<usize> = label_rows(&marks, XAxis::Bytes, (12.0, 26.0))
            .iter()
            .map(|(_, r)| *r)
            .collect();
        // A row holds tags their own width apart: L1's two share no row, L2's first joins L1's
        // row, the three within a MiB of each other take a row each.
        assert_eq!(rows, [0, 1, 0, 1, 2]);
    }

    #[test]
    fn overlaid_runs_are_a_colour_each_and_their_series_a_dash_each() {
        let s = |name: &str, side| Series {
            name: name.into(),
            points: vec![(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)],
            side,
        };
        let alone = [s("chunk", 0), s("random", 0)];
        assert_ne!(style_of(&alone, &alone[0]).0, style_of(&alone, &alone[1]).0);
        assert_eq!(style_of(&alone, &alone[1]).1, None);
        let two = [
            s("A: chunk", 0),
            s("A: random", 0),
            s("B: chunk", 1),
            s("B: random", 1),
        ];
        let st: Vec<_> = two.iter().map(|x| style_of(&two, x)).collect();
        assert_eq!(st[0].0, st[1].0, "one run, one colour");
        assert_ne!(st[0].0, st[2].0, "two runs, two colours");
        assert_eq!(
            (st[0].1, st[1].1),
            (st[2].1, st[3].1),
            "a series keeps its dash"
        );
        assert_ne!(st[0].1, st[1].1);
    }

    #[test]
    fn figures_no_axis_can_hold_are_refused_not_drawn_for_ever() {
        let series = |ys: [f64; 3]| Series {
            name: "s".into(),
            points: vec![(4096.0, ys[0]), (8192.0, ys[1]), (16384.0, ys[2])],
            side: 0,
        };
        for ys in [[1.0, 2.0, 1e300], [1e-310, 1.0, 2.0], [1.0, f64::MAX, 3.0]] {
            let drawn = lines("x", XAxis::Bytes, ("size", "ns"), &[series(ys)], &[], true);
            assert!(drawn.is_err(), "{ys:?}");
        }
        let bar = Bar {
            label: "huge".into(),
            value: 1e300,
            interval: None,
            side: 0,
        };
        assert!(bars("costs", "ns", &[bar]).is_err());
    }

    #[test]
    fn bars_stand_on_zero_on_a_linear_axis_in_the_unit_they_read_best_in() {
        let bar = |label: &str, value: f64| Bar {
            label: label.into(),
            value,
            interval: Some((value * 0.01, value * 1.1)),
            side: 0,
        };
        // Decades apart, and an interval reaching far down: still linear from zero.
        let wide = bars("costs", "ns", &[bar("vdso", 40.0), bar("cold", 30_000.0)]).unwrap();
        let shown = labels(&wide);
        assert!(shown.iter().any(|l| l == "µs"), "{shown:?}");
        assert!(shown.iter().any(|l| l == "0"), "{shown:?}");
        assert!(!shown.iter().any(|l| l.contains("log")), "{shown:?}");
        let near = bars("costs", "ns", &[bar("a", 40.0), bar("b", 300.0)]).unwrap();
        assert!(
            labels(&near).iter().any(|l| l == "ns"),
            "{:?}",
            labels(&near)
        );
    }

    #[test]
    fn an_axis_under_a_decade_is_linear_with_its_ticks_labelled() {
        let curve = Series {
            name: "loaded".into(),
            points: vec![(1.0, 95.0), (2.0, 104.0), (4.0, 131.0)],
            side: 0,
        };
        let svg = lines(
            "loaded latency",
            XAxis::Count,
            ("GB/s", "ns"),
            &[curve],
            &[],
            true,
        )
        .unwrap();
        let numbers = labels(&svg)
            .iter()
            .filter(|l| l.parse::<f64>().is_ok_and(|v| v >= 20.0))
            .count();
        assert!(numbers >= 3, "{:?}", labels(&svg));
    }

    #[test]
    fn a_far_whisker_is_cut_and_marked_not_the_axis_stretched() {
        let bar = |label: &str, value: f64, hi: f64| Bar {
            label: label.into(),
            value,
            interval: Some((value * 0.9, hi)),
            side: 0,
        };
        let svg = bars(
            "switch costs",
            "ns",
            &[
                bar("a", 21_500.0, 23_000.0),
                bar("b", 59_780.0, 1_800_000.0),
            ],
        )
        .unwrap();
        let shown = labels(&svg);
        // The axis is the bars' (µs, up to about 2 x 60), the whisker's reach written at its cut.
        let ticks: Vec<f64> = shown.iter().filter_map(|l| l.parse().ok()).collect();
        let last = ticks.iter().copied().fold(0.0, f64::max);
        assert!((60.0..=150.0).contains(&last), "{shown:?}");
        assert!(
            shown
                .iter()
                .any(|l| l.starts_with("▸") && l.contains("1800")),
            "{shown:?}"
        );
        assert!(shown.iter().any(|l| l == "59.8"), "{shown:?}");
    }

    #[test]
    fn bars_fill_the_plot_with_no_empty_slot_first_at_the_top() {
        let bar = |value: f64| Bar {
            label: format!("b{value}"),
            value,
            interval: Some((value * 0.9, value * 1.1)),
            side: 0,
        };
        for n in 1..=3 {
            let all: Vec<Bar> = (1..=n).map(|v| bar(v as f64 * 10.0)).collect();
            let svg = bars("costs", "ns", &all).unwrap();
            let attr = |l: &str, k: &str| -> f64 {
                let v = l.split(&format!(" {k}=\"")).nth(1).unwrap();
                v[..v.find('"').unwrap()].parse().unwrap()
            };
            // The vertical grid lines span the plot's height; the bars must fill it, evenly.
            let grid = svg
                .lines()
                .find(|l| l.starts_with("<line") && attr(l, "x1") == attr(l, "x2"))
                .unwrap();
            let (top, bottom) = (
                attr(grid, "y1").min(attr(grid, "y2")),
                attr(grid, "y1").max(attr(grid, "y2")),
            );
            let mut rects: Vec<(f64, f64, f64)> = svg
                .lines()
                .filter(|l| l.starts_with("<rect") && l.contains("opacity=\"0.8\""))
                .map(|l| (attr(l, "y"), attr(l, "height"), attr(l, "width")))
                .collect();
            assert_eq!(rects.len(), n, "{svg}");
            rects.sort_by(|a, b| a.0.total_cmp(&b.0));
            assert!((rects[0].0 - top).abs() <= 4.0, "{rects:?} from {top}");
            let end = rects.last().map(|(y, h, _)| y + h).unwrap();
            assert!(
                (end - bottom).abs() <= 4.0 + n as f64,
                "{rects:?} to {bottom}"
            );
            // The first bar (the smallest value) is at the top, the last at the bottom.
            assert!(rects.windows(2).all(|w| w[0].2 < w[1].2), "{rects:?}");
            assert!(
                (1..=n).all(|v| labels(&svg).contains(&format!("b{}", v * 10))),
                "{:?}",
                labels(&svg)
            );
        }
    }

    /// The text of every `<text>` element.
    fn labels(svg: &str) -> Vec<String> {
        svg.split("</text>")
            .filter_map(|part| Some(part.rsplit_once('>')?.1.trim().to_string()))
            .filter(|t| !t.is_empty())
            .collect()
    }

    #[test]
    fn every_chart_is_an_svg_with_its_labels() {
        let s = lines(
            "latency",
            XAxis::Bytes,
            ("working set", "ns"),
            &[Series {
                name: "random".into(),
                points: vec![(4096.0, 1.4), (1e6, 5.0), (1e9, 300.0)],
                side: 0,
            }],
            &[Mark {
                x: 49152.0,
                to: None,
                tag: "L1".into(),
                label: "L1 48 KiB".into(),
            }],
            true,
        )
        .unwrap();
        assert!(s.starts_with("<svg") && s.contains("random") && s.contains("L1 48 KiB"));
        // Sizes tick at powers of two, labelled as sizes; values read as plain numbers.
        let ticks = labels(&s);
        // Of the ten ticks every other power of four, six at most labelled: 16 KiB is a mark.
        for label in ["4 KiB", "64 KiB", "1 MiB", "256 MiB", "10", "100"] {
            assert!(
                ticks.iter().any(|t| t == label),
                "no {label} tick: {ticks:?}"
            );
        }
        assert!(!s.contains("9.766") && !s.contains("100.0"), "{ticks:?}");
        // Thread counts tick at whole numbers, with no unit.
        let t = lines(
            "threads",
            XAxis::Count,
            ("threads", "GB/s"),
            &[Series {
                name: "triad plain".into(),
                points: vec![(1.0, 10.0), (2.0, 19.0), (4.0, 30.0), (8.0, 41.0)],
                side: 0,
            }],
            &[],
            false,
        )
        .unwrap();
        let ticks = labels(&t);
        for label in ["1", "2", "4", "8"] {
            assert!(
                ticks.iter().any(|t| t == label),
                "no {label} tick: {ticks:?}"
            );
        }
        assert!(
            !ticks
                .iter()
                .any(|t| t.ends_with(" B") || t.contains("1.000")),
            "{ticks:?}"
        );
        assert_eq!(XAxis::Bytes.ticks(12.0, 30.0).len(), 10);
        assert_eq!(
            XAxis::Count.ticks(1.0, 8.0),
            vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
        );
        let b = bars(
            "fork",
            "µs",
            &[Bar {
                label: "fork".into(),
                value: 40.0,
                interval: Some((38.0, 42.0)),
                side: 0,
            }],
        )
        .unwrap();
        assert!(b.contains("<svg") && b.contains("fork"));
        let h = heatmap(
            "numa",
            &["cpu 0".into()],
            &["mem 0".into(), "mem 1".into()],
            &[vec![Some(20.0), Some(10.0)]],
            &|_, _, v| format!("{v:.1}"),
        )
        .unwrap();
        assert!(h.contains("20.0") && h.contains("mem 1"));
        let t = timeline(
            "activity",
            &[Track {
                name: "cpu 1".into(),
                spans: vec![(0.0, 4e6, 0), (4e6, 3e4, 1)],
            }],
            5e6,
            &["active", "inactive"],
        )
        .unwrap();
        assert!(t.contains("cpu 1") && t.contains("inactive"));
        assert!(lines("x", XAxis::Count, ("x", "y"), &[], &[], false).is_err());
    }
}

/// Which way a change in a forest plot went: its colour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Direction {
    /// Worse (red).
    Worse,
    /// Better (green).
    Better,
    /// Changed in a unit with no better direction (amber).
    Neither,
}

impl Direction {
    /// Which way a changed row went, by its verdict.
    pub fn of(verdict: oslab_core::stats::compare::Verdict) -> Direction {
        use oslab_core::stats::compare::Verdict;
        match verdict {
            Verdict::Regression => Direction::Worse,
            Verdict::Better => Direction::Better,
            _ => Direction::Neither,
        }
    }

    /// The mark a chart puts beside a changed row: ▲ worse, ▼ better, ◆ neither.
    pub fn sign(self) -> &'static str {
        match self {
            Direction::Worse => "▲",
            Direction::Better => "▼",
            Direction::Neither => "◆",
        }
    }
}

/// One row of a forest plot: a measurement's change B/A with its interval and band.
pub struct Change {
    /// What was measured, at the row's left.
    pub label: String,
    /// B / A.
    pub ratio: f64,
    /// The ratio's interval.
    pub interval: Option<(f64, f64)>,
    /// The relative change within which the verdict would have been "same": shaded.
    pub band: f64,
    /// Its colour.
    pub direction: Direction,
}

/// Width of a forest plot: the comparison page's whole width (1,200 px less its padding), so
/// its text is shown at the size it is set in.
const FOREST_WIDTH: u32 = 1100;

/// Changes worth marking on a forest plot's axis, as ratios: a tick is drawn at each within the
/// drawn range (a log axis's own ticks would fall at ratios like 1.105).
const FOREST_TICKS: [f64; 17] = [
    0.1, 0.25, 0.5, 0.67, 0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 100.0,
];

/// A ratio as the change people say: `+25%`, `-50%`, `0`, `x3` from three times on.
fn change_label(ratio: f64) -> String {
    match ratio {
        r if (r - 1.0).abs() < 1e-9 => "0".into(),
        r if r >= 3.0 => format!("x{}", plain(r)),
        r if r > 1.0 => format!("+{}", oslab_core::units::percent(r - 1.0)),
        r => oslab_core::units::percent(r - 1.0),
    }
}

/// A forest plot: one row per change, largest first, its ratio a dot with the interval as a
/// whisker on a log axis (halving and doubling equally far from no change), its band shaded,
/// worse red, better green, the change written at the right.
pub fn forest(title: &str, changes: &[Change]) -> Result<String, PlotError> {
    if changes.is_empty() {
        return Err("no changes to draw".into());
    }
    let mut rows: Vec<&Change> = changes.iter().collect();
    rows.sort_by(|a, b| b.ratio.ln().abs().total_cmp(&a.ratio.ln().abs()));
    let ends: Vec<f64> = rows
        .iter()
        .flat_map(|c| {
            let (lo, hi) = c.interval.unwrap_or((c.ratio, c.ratio));
            [c.ratio, lo, hi, 1.0 - c.band.min(0.95), 1.0 + c.band]
        })
        .filter(|v| *v > 0.0)
        .collect();
    drawable(&ends)?;
    let lo = ends.iter().copied().fold(1.0, f64::min).ln();
    let hi = ends.iter().copied().fold(1.0, f64::max).ln();
    let pad = (hi - lo).max(0.1) * 0.06;
    let (lo, hi) = (lo - pad, hi + pad);
    let n = rows.len();
    let labels: Vec<String> = rows.iter().rev().map(|c| c.label.clone()).collect();
    let widest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(1);
    let label_area = (widest as u32 * 8 + 16).clamp(80, 480);
    // Room at the right for the change written out, and at the bottom for the axis's ticks.
    let text_area = 190;
    let height = 90 + 28 * n as u32;
    draw_sized((FOREST_WIDTH, height), |root| {
        let mut chart = row_chart(root, title, (label_area, text_area), (lo, hi), &labels)?;
        // Ticks at least 70 px apart (a label is 4-6 characters), no change's first, then out
        // from it: -10% -5% 0 +5% +10% ran together on an axis of 300 px.
        let plot_px = FOREST_WIDTH - label_area - text_area - 24;
        let per_px = (hi - lo) / plot_px as f64;
        let mut ticks: Vec<f64> = vec![];
        let mut near_first: Vec<f64> = FOREST_TICKS
            .iter()
            .copied()
            .filter(|t| (lo..=hi).contains(&t.ln()))
            .collect();
        near_first.sort_by(|a, b| a.ln().abs().total_cmp(&b.ln().abs()));
        for t in near_first {
            if ticks
                .iter()
                .all(|u| (u.ln() - t.ln()).abs() / per_px >= 70.0)
            {
                ticks.push(t);
            }
        }
        let marks: Vec<(f64, String, f64)> = ticks
            .iter()
            .map(|t| (t.ln(), change_label(*t), if *t == 1.0 { 0.8 } else { 0.15 }))
            .collect();
        draw_ticks(&mut chart, &marks, n)?;
        for (i, c) in rows.iter().enumerate() {
            let y = (n - 1 - i) as f64 + 0.5;
            let band = ((1.0 - c.band.min(0.95)).ln(), (1.0 + c.band).ln());
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(band.0.max(lo), y - 0.4), (band.1.min(hi), y + 0.4)],
                    BLACK.mix(0.08).filled(),
                )))
                .map_err(err)?;
            let color = match c.direction {
                Direction::Worse => PALETTE[1],
                Direction::Better => PALETTE[2],
                Direction::Neither => PALETTE[4],
            };
            if let Some((a, b)) = c.interval {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(a.ln(), y), (b.ln(), y)],
                        color.stroke_width(2),
                    )))
                    .map_err(err)?;
            }
            chart
                .draw_series(std::iter::once(Circle::new(
                    (c.ratio.ln(), y),
                    5,
                    color.filled(),
                )))
                .map_err(err)?;
            let said = match c.interval {
                Some((a, b)) => format!(
                    "{} ({} to {})",
                    change_label(c.ratio),
                    change_label(a),
                    change_label(b)
                ),
                None => change_label(c.ratio),
            };
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((hi, y))
                        + Text::new(
                            said,
                            (10, -8),
                            ("sans-serif", TEXT).into_font().color(&color),
                        ),
                ))
                .map_err(err)?;
        }
        Ok(())
    })
}

/// A time in ns as an axis tick reads: `10 ns`, `2 µs`, `1 ms`.
fn time_tick(ns: f64) -> String {
    let (div, unit) = [(1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns")]
        .into_iter()
        .find(|(d, _)| ns >= *d * 0.999)
        .unwrap_or((1.0, "ns"));
    format!("{} {unit}", plain((ns / div * 1000.0).round() / 1000.0))
}

/// Times of several operations on one log axis, a row each with its median a dot and its
/// interval a whisker, the value written beside it: costs orders of magnitude apart (a 1 ns
/// call beside a 4 µs cpuid) in one chart, none a sliver, none a chart of its own (one- and
/// two-bar charts said less than a table row). Rows keep the order given; bars of the same
/// label from overlaid runs share its row, a colour each.
pub fn dots(title: &str, bars: &[Bar]) -> Result<String, PlotError> {
    let mut labels: Vec<&str> = Vec::new();
    for b in bars {
        if !labels.contains(&b.label.as_str()) {
            labels.push(&b.label);
        }
    }
    let ends: Vec<f64> = bars
        .iter()
        .flat_map(|b| {
            let (lo, hi) = b.interval.unwrap_or((b.value, b.value));
            [b.value, lo, hi]
        })
        .filter(|v| *v > 0.0)
        .collect();
    if ends.is_empty() {
        return Err("no times to draw".into());
    }
    drawable(&ends)?;
    let lo = ends.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ends.iter().copied().fold(0.0, f64::max);
    // From a little below the decade under the least value (its tick clear of the axis line) to
    // a third of a decade above the largest, at least a decade in all.
    let (lo, hi) = (
        lo.log10().floor() - 0.12,
        (hi.log10() + 0.35).max(lo.log10().floor() + 1.0),
    );
    let n = labels.len();
    let sides = bars.iter().map(|b| b.side).max().unwrap_or(0) + 1;
    let widest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(1);
    let label_area = (widest as u32 * 8 + 16).clamp(60, 300);
    let height = 70 + (22 + 16 * (sides as u32 - 1)) * n as u32;
    let from_top: Vec<String> = labels.iter().rev().map(|l| l.to_string()).collect();
    draw_sized((SIZE.0, height), |root| {
        let mut chart = row_chart(root, title, (label_area, 20), (lo, hi), &from_top)?;
        // A tick at each power of ten, and at 2 and 5 times it when the axis spans few decades.
        let decades = (hi - lo).ceil() as i32;
        let steps: &[f64] = if decades <= 2 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        let marks: Vec<(f64, String, f64)> = (lo.floor() as i32..=hi.ceil() as i32)
            .flat_map(|d| steps.iter().map(move |s| (d, *s)))
            .map(|(d, s)| {
                let v = 10f64.powi(d) * s;
                (v.log10(), time_tick(v), if s == 1.0 { 0.25 } else { 0.1 })
            })
            .filter(|(x, _, _)| (lo..=hi).contains(x))
            .collect();
        draw_ticks(&mut chart, &marks, n)?;
        for b in bars {
            let Some(row) = labels.iter().position(|l| *l == b.label) else {
                continue;
            };
            // Overlaid runs' dots a little apart within their row, the first on top.
            let spread = 0.8 / sides as f64;
            let y =
                (n - 1 - row) as f64 + 0.5 + spread * ((sides - 1) as f64 / 2.0 - b.side as f64);
            let color = PALETTE[b.side % PALETTE.len()];
            if let Some((a, z)) = b.interval.filter(|(a, z)| *a > 0.0 && *z > 0.0) {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(a.log10().max(lo), y), (z.log10().min(hi), y)],
                        color.stroke_width(2),
                    )))
                    .map_err(err)?;
            }
            if b.value <= 0.0 {
                continue;
            }
            chart
                .draw_series(std::iter::once(Circle::new(
                    (b.value.log10(), y),
                    4,
                    color.filled(),
                )))
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((b.value.log10(), y))
                        + Text::new(
                            oslab_core::units::value(b.value, oslab_core::model::Unit::Ns),
                            (9, -8),
                            ("sans-serif", TEXT - 2).into_font(),
                        ),
                ))
                .map_err(err)?;
        }
        Ok(())
    })
}

/// The chart a forest or dot plot draws on: one row per label from the top over [-1, rows]
/// (the axis's tick labels in the row below the last), `lo..hi` across, the labels at the left
/// in `areas.0` px and `areas.1` px kept free at the right; no mesh (the ticks are drawn at the
/// values that read well, [`draw_ticks`]).
type RowChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

fn row_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    areas: (u32, u32),
    (lo, hi): (f64, f64),
    from_top: &[String],
) -> Result<RowChart<'a, 'b>, PlotError> {
    let n = from_top.len();
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .margin_right(areas.1)
        .x_label_area_size(0)
        .y_label_area_size(areas.0)
        .build_cartesian_2d(lo..hi, -1.0..n as f64)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .y_labels(2 * n + 3)
        .y_label_style(("sans-serif", TEXT))
        .y_label_formatter(&|y| label_at(from_top, *y))
        .x_label_formatter(&|_| String::new())
        .set_tick_mark_size(LabelAreaPosition::Left, 0)
        .draw()
        .map_err(err)?;
    Ok(chart)
}

/// Vertical lines at `marks` (x, label, ink from 0 to 1) over the `n` rows of a [`row_chart`],
/// each labelled under the rows.
fn draw_ticks(
    chart: &mut RowChart,
    marks: &[(f64, String, f64)],
    n: usize,
) -> Result<(), PlotError> {
    for (x, label, ink) in marks {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(*x, -0.1), (*x, n as f64)],
                BLACK.mix(*ink).stroke_width(1),
            )))
            .map_err(err)?;
        chart
            .draw_series(std::iter::once(Text::new(
                label.clone(),
                (*x, -0.55),
                TextStyle::from(("sans-serif", TEXT).into_font())
                    .pos(Pos::new(HPos::Center, VPos::Center)),
            )))
            .map_err(err)?;
    }
    Ok(())
}
