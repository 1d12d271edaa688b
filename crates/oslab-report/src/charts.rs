//! The HTML report's charts, per probe family (the catalog names each family's chart): series
//! and bars taken from measurements, several sides overlaid, drawn by [`crate::plots`].

use crate::markup::*;
use crate::plots::{self, Bar, Mark, Series, Track, XAxis};
use oslab_core::catalog::{id, metric, Chart, Family};
use oslab_core::model::{EventKind, Measurement, TimelineEvent, Unit};
use oslab_core::units::{num, value};
use oslab_store::RunRecord;
use std::collections::BTreeMap;

/// A chart and its caption.
pub type Figure = (String, String);

/// What a line chart's dashes mean: alone, the machine model's prediction; overlaid, each run is
/// a colour and the dash tells its curves apart (the models are not drawn).
fn dashes(sides: &[Drawn]) -> &'static str {
    match sides {
        [_] => "dashed: the machine model's prediction",
        _ => "a colour per run, a dash per curve (the model's predictions are in each run's own report)",
    }
}

/// What a bandwidth chart of `probe` is called: the memory's, unless a figure of it was partly a
/// cache's (a `--quick` run's arrays), which no chart calls RAM.
fn bandwidth_of(sides: &[Drawn], probe: &str) -> &'static str {
    let partly = sides.iter().flat_map(|s| &s.ms).any(|m| {
        m.probe == probe
            && m.context
                .get(oslab_core::beyond_cache::MARK)
                .and_then(|v| v.as_str())
                == Some(oslab_core::beyond_cache::PARTLY_CACHE)
    });
    match partly {
        true => "Bandwidth, arrays partly in a cache",
        false => "RAM bandwidth",
    }
}

fn figure(svg: Result<String, crate::plots::PlotError>, caption: &str) -> Option<Figure> {
    svg.ok().map(|s| (s, caption.to_string()))
}

pub(crate) fn figure_html((svg, caption): &Figure) -> Html {
    html!(
        "<figure>{}<figcaption>{}</figcaption></figure>\n",
        Html::drawn(svg.clone()),
        caption
    )
}

/// The longest label a forest plot's row takes before it is shortened (its label area is at
/// most 480 px of 1,100).
const FOREST_LABEL: usize = 58;

/// Every row judged changed as one forest plot (B/A with its interval, the band shaded, the
/// largest first): the comparison's answer drawn. None when no row changed.
pub fn forest(rows: &[&oslab_core::stats::compare::Row]) -> Option<Figure> {
    use plots::{Change, Direction};
    let changes: Vec<Change> = rows
        .iter()
        .filter(|r| r.judgement.verdict.is_change())
        .filter_map(|r| {
            let label = format!("{} {} {}", r.probe, metric::words(&r.metric), r.params);
            let label = match label.trim().chars().count() > FOREST_LABEL {
                true => format!(
                    "{}…",
                    label.chars().take(FOREST_LABEL - 1).collect::<String>()
                ),
                false => label.trim().to_string(),
            };
            Some(Change {
                label,
                ratio: r.judgement.ratio?,
                interval: r.judgement.interval.map(|[lo, hi]| (lo, hi)),
                band: r.judgement.band,
                direction: Direction::of(r.judgement.verdict),
            })
        })
        .collect();
    let n = changes.len();
    figure(
        plots::forest("What changed, B against A", &changes),
        &format!(
            "{}, B/A on a log axis (halving as far from 0 as doubling), the largest first: the dot \
             is the change, the whisker its interval, the grey band the change within which a \
             row reads `same`; red worse, green better, amber changed with no better direction",
            oslab_core::units::counted(n, "changed row")
        ),
    )
}

fn median(m: &Measurement) -> Option<f64> {
    m.status.has_value().then_some(())?;
    m.summary.as_ref().map(|s| s.median)
}

fn param<'a>(m: &'a Measurement, k: &str) -> Option<&'a serde_json::Value> {
    m.params.get(k)
}

/// Series of `metric` over the numeric parameter `x`, one series per combination of the values
/// of the parameters `by` names (space-separated; none: one series per probe).
fn series_by(
    ms: &[&Measurement],
    probe_prefix: &str,
    metric: &str,
    x: &str,
    by: &str,
) -> Vec<Series> {
    let mut groups: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for m in ms
        .iter()
        .filter(|m| m.probe.starts_with(probe_prefix) && m.metric == metric)
    {
        if let (Some(xv), Some(y)) = (param(m, x).and_then(|v| v.as_f64()), median(m)) {
            let name = if by.is_empty() {
                m.probe.clone()
            } else {
                by.split(' ')
                    .map(|k| m.param_text(k))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            groups.entry(name).or_default().push((xv, y));
        }
    }
    groups
        .into_iter()
        .map(|(name, points)| Series {
            name,
            points,
            side: 0,
        })
        .collect()
}

/// Loaded latency: per kind of traffic, (the loaders' bandwidth, the chase's latency) at each
/// pause; the idle point at zero bandwidth.
fn loaded_curves(ms: &[&Measurement]) -> Vec<Series> {
    let mut curves: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for m in ms
        .iter()
        .filter(|m| m.probe == id::MEMORY_LATENCY_LOADED && m.metric == "per_load")
    {
        let Some(latency) = median(m) else { continue };
        let bandwidth = ms
            .iter()
            .find(|b| b.probe == m.probe && b.metric == "load_bandwidth" && b.params == m.params)
            .and_then(|b| median(b))
            .unwrap_or(0.0);
        curves
            .entry(m.param_text("traffic"))
            .or_default()
            .push((bandwidth, latency));
    }
    curves
        .into_iter()
        .map(|(name, points)| Series {
            name,
            points,
            side: 0,
        })
        .collect()
}

/// The predictions of the measurements `series_by` would draw, one dashed line per series.
fn model_series(ms: &[&Measurement], probe: &str, metric: &str, x: &str, by: &str) -> Vec<Series> {
    let predicted: Vec<Measurement> = ms
        .iter()
        .filter(|m| m.probe == probe && m.metric == metric)
        .filter_map(|m| {
            let mut p = (*m).clone();
            p.summary = oslab_core::Summary::new(&[m.prediction.as_ref()?.value]);
            Some(p)
        })
        .collect();
    let refs: Vec<&Measurement> = predicted.iter().collect();
    series_by(&refs, probe, metric, x, by)
        .into_iter()
        .map(|s| Series {
            name: format!("{}{}", plots::MODEL, s.name),
            ..s
        })
        .collect()
}

/// Cache sizes to mark: what sysfs claims (fingerprint) and what the curve showed.
/// The caches as marks: a level's size as sysfs claims it and as the chunk curve shows it are
/// one band tagged with the level (`L2`), its legend line saying both; a level seen that sysfs
/// does not list, or listed and not seen, is a line.
fn cache_marks(ms: &[&Measurement], record: &RunRecord) -> Vec<Mark> {
    let mut claimed: Vec<(String, f64)> = record.fingerprint["topology"]["caches"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["kind"] != "instruction")
        .filter_map(|c| Some((format!("L{}", c["level"]), c["size"].as_u64()? as f64)))
        .collect();
    claimed.sort_by(|a, b| a.1.total_cmp(&b.1));
    claimed.dedup_by(|a, b| a.1 == b.1);
    let seen: Vec<(String, f64)> = ms
        .iter()
        .filter(|m| m.metric == "level_size")
        .filter_map(|m| Some((m.param_text("level"), median(m)?)))
        .collect();
    let size = |x: f64| oslab_core::units::bytes(x as u64);
    let mut marks: Vec<Mark> = claimed
        .iter()
        .map(|(tag, x)| {
            let to = seen.iter().find(|(t, _)| t == tag).map(|s| s.1);
            Mark {
                x: *x,
                to,
                tag: tag.clone(),
                label: match to {
                    Some(t) => format!("{tag}: {} (sysfs),\n  {} seen", size(*x), size(t)),
                    None => format!("{tag}: {} (sysfs)", size(*x)),
                },
            }
        })
        .collect();
    for (tag, x) in seen
        .iter()
        .filter(|(t, _)| !claimed.iter().any(|c| c.0 == *t))
    {
        marks.push(Mark {
            x: *x,
            to: None,
            tag: tag.clone(),
            label: format!("{tag}: {} seen", size(*x)),
        });
    }
    marks
}

/// What one chart overlay draws: a run, or runs taken together, pooled.
pub struct Drawn<'a> {
    /// How the legend names it ("run 3", "tag kernel=6.18").
    pub label: String,
    /// Its measurements.
    pub ms: Vec<&'a Measurement>,
    /// Measurements a comparison judged changed (by [`oslab_core::stats::compare::key`]) and
    /// the change to mark them with (`▲ +97%`); empty for a run drawn alone.
    pub changed: Changed,
}

/// What [`Drawn::changed`] holds.
pub type Changed = BTreeMap<(String, String, String), String>;

/// One run drawn alone.
pub(crate) fn alone<'a>(ms: &[&'a Measurement]) -> [Drawn<'a>; 1] {
    [Drawn {
        label: String::new(),
        ms: ms.to_vec(),
        changed: Changed::new(),
    }]
}

/// The series `f` finds in each side, named after their side when there are several.
fn overlaid_series(sides: &[Drawn], f: impl Fn(&[&Measurement]) -> Vec<Series>) -> Vec<Series> {
    sides
        .iter()
        .enumerate()
        .flat_map(|(k, side)| {
            f(&side.ms).into_iter().map(move |mut s| {
                if sides.len() > 1 {
                    s.name = format!("{}: {}", side.label, s.name);
                    s.side = k;
                }
                s
            })
        })
        .collect()
}

/// The bars `f` finds in each side, the sides' bars of one label next to each other.
fn overlaid_bars(sides: &[Drawn], f: impl Fn(&[&Measurement]) -> Vec<Bar>) -> Vec<Bar> {
    let mut per: Vec<std::vec::IntoIter<Bar>> = sides
        .iter()
        .enumerate()
        .map(|(k, side)| {
            let mut v = f(&side.ms);
            if sides.len() > 1 {
                v.iter_mut().for_each(|b| {
                    b.label = format!("{} ({})", b.label, side.label);
                    b.side = k;
                });
            }
            v.into_iter()
        })
        .collect();
    let mut out = Vec::new();
    loop {
        let before = out.len();
        out.extend(per.iter_mut().filter_map(Iterator::next));
        if out.len() == before {
            return out;
        }
    }
}

/// The charts of one probe family, each side overlaid (the record's machine marks the caches):
/// the catalog says which chart a family has.
pub fn charts(family: &str, sides: &[Drawn], record: &RunRecord) -> Vec<Figure> {
    let draw = match Family::of(family).and_then(Family::chart) {
        None => return Vec::new(),
        Some(Chart::Latency) => memory,
        Some(Chart::Bandwidth) => bandwidth,
        Some(Chart::Calls) => call,
        Some(Chart::Costs) => costs,
        Some(Chart::Ipc) => ipc,
        Some(Chart::Numa) => numa,
        Some(Chart::Migrate) => migrate,
        Some(Chart::C2c) => c2c,
        Some(Chart::ShuffleSim) => shuffle_sim,
    };
    draw(family, sides, record)
}

fn memory(_family: &str, sides: &[Drawn], record: &RunRecord) -> Vec<Figure> {
    let mut out = Vec::new();
    // The three curves' own probes only: the parallel and page-size chases also have an order
    // and a size, and joined into these curves they drew spikes at the sizes they measure.
    let mut curves = overlaid_series(sides, |ms| {
        [
            id::MEMORY_LATENCY_CHUNK,
            id::MEMORY_LATENCY_RANDOM,
            id::MEMORY_LATENCY_SEQUENTIAL,
        ]
        .iter()
        .flat_map(|probe| series_by(ms, probe, metric::PER_LOAD, "size", "order"))
        .collect()
    });
    if let [one] = sides {
        curves.extend(model_series(
            &one.ms,
            id::MEMORY_LATENCY_CHUNK,
            metric::PER_LOAD,
            "size",
            "order",
        ));
    }
    out.extend(figure(
        plots::lines("load-to-use latency vs working set", XAxis::Bytes, ("working set", "ns per load"), &curves, &cache_marks(&sides[0].ms, record), true),
        &format!("Dependent loads, one per cache line; grey bands: each cache level from the size sysfs claims to the size the chunk curve shows (a VM often claims more than serves it); {}.", dashes(sides)),
    ));
    let mlp = overlaid_bars(sides, |ms| {
        series_by(
            ms,
            id::MEMORY_LATENCY_PARALLEL,
            metric::PER_LOAD,
            "chases",
            "",
        )
        .iter()
        .flat_map(|s| s.points.iter())
        .map(|&(k, y)| Bar {
            label: format!("{k:.0}"),
            value: y,
            interval: None,
            side: 0,
        })
        .collect()
    });
    let loaded = overlaid_series(sides, loaded_curves);
    out.extend(figure(
        plots::lines("loaded latency: latency vs the other cpus' memory traffic", XAxis::Count, ("GB/s the loaders moved", "ns per load"), &loaded, &[], false),
        "MLC's loaded-latency curve: the idle-latency chase while the other cpus stream memory, pausing less and less between blocks (the idle point, with no loaders, is the table's pause=idle row).",
    ));
    out.extend(figure(
        plots::bars("time per load vs independent chases", "ns per load", &mlp),
        "Memory-level parallelism: more chases in flight, less time per load.",
    ));
    // The first side's map, then each other side as its ratio to it, cell by cell: one map
    // says what changed (drawn a map per side, the two were a screen apart).
    if let Some(first) = sides.first() {
        out.extend(stride_table(first));
    }
    for side in sides.iter().skip(1) {
        out.extend(stride_ratio(&sides[0], side));
    }
    out
}

/// The stride table's cells of a side: (size, stride, ns per load).
fn stride_cells(side: &Drawn) -> Vec<(u64, u64, f64)> {
    side.ms
        .iter()
        .filter(|m| m.probe == id::MEMORY_LATENCY_STRIDE && m.metric == metric::PER_LOAD)
        .filter_map(|m| cell(m, "size", "stride"))
        .collect()
}

/// Side `b`'s stride table over side `a`'s, cell by cell (the cells both measured).
fn stride_ratio(a: &Drawn, b: &Drawn) -> Option<Figure> {
    let base = stride_cells(a);
    let cells: Vec<(u64, u64, f64)> = stride_cells(b)
        .into_iter()
        .filter_map(|(r, c, v)| {
            let under = base.iter().find(|x| x.0 == r && x.1 == c)?.2;
            (under > 0.0).then_some((r, c, v / under))
        })
        .collect();
    let (rows, cols, values) = grid(&cells);
    if rows.len() < 2 || cols.len() < 2 {
        return None;
    }
    let bytes =
        |v: &[u64]| -> Vec<String> { v.iter().map(|&b| oslab_core::units::bytes(b)).collect() };
    figure(
        plots::heatmap(
            &format!("{} / {}: working set x stride", b.label, a.label),
            &bytes(&rows),
            &bytes(&cols),
            &values,
            &|_, _, v| format!("{v:.2}"),
        ),
        &format!(
            "Each cell's time per load in {} over {}'s: above 1 slower, below 1 faster (the cells' own times are in {}'s map above and the tables).",
            b.label, a.label, a.label
        ),
    )
}

/// The size x stride table as a heatmap (lmbench's lat_mem_rd matrix): rows the working set,
/// columns the stride, each cell the time per load; strides under a page are walked in address
/// order, where the prefetchers run ahead.
fn stride_table(side: &Drawn) -> Option<Figure> {
    let cells = stride_cells(side);
    let (rows, cols, values) = grid(&cells);
    if rows.len() < 2 || cols.len() < 2 {
        return None;
    }
    let bytes =
        |v: &[u64]| -> Vec<String> { v.iter().map(|&b| oslab_core::units::bytes(b)).collect() };
    let title = match side.label.is_empty() {
        true => "ns per load: working set (rows) x stride (columns)".to_string(),
        false => format!("ns per load: working set x stride ({})", side.label),
    };
    figure(
        plots::heatmap(&title, &bytes(&rows), &bytes(&cols), &values, &|_, _, v| num(v)),
        "Dependent loads one stride apart in address order: under a page the prefetchers run ahead; from a page up every load is a new page (the TLB) and strides that are multiples of a cache's set span meet its associativity.",
    )
}

fn bandwidth(_family: &str, sides: &[Drawn], record: &RunRecord) -> Vec<Figure> {
    let mut out = Vec::new();
    let mut sweep = overlaid_series(sides, |ms| {
        series_by(ms, id::BANDWIDTH_SWEEP, metric::BANDWIDTH, "size", "kernel")
    });
    if let [one] = sides {
        sweep.extend(model_series(
            &one.ms,
            id::BANDWIDTH_SWEEP,
            metric::BANDWIDTH,
            "size",
            "kernel",
        ));
    }
    out.extend(figure(
        plots::lines(
            "bandwidth vs working set",
            XAxis::Bytes,
            ("working set", "GB/s"),
            &sweep,
            &cache_marks(&sides[0].ms, record),
            false,
        ),
        &format!(
            "One thread; each cache level shows as a plateau; {}.",
            dashes(sides)
        ),
    ));
    let stream = overlaid_bars(sides, |ms| {
        bar_list(
            ms,
            id::BANDWIDTH_STREAM,
            metric::BANDWIDTH,
            &["kernel", "stores"],
        )
    });
    out.extend(figure(
        plots::bars(
            &format!(
                "{}, one thread (STREAM counting)",
                bandwidth_of(sides, id::BANDWIDTH_STREAM)
            ),
            "GB/s",
            &stream,
        ),
        "Median with CI95; plain vs non-temporal stores.",
    ));
    let mixes = overlaid_bars(sides, |ms| {
        bar_list(
            ms,
            id::BANDWIDTH_MIX,
            metric::BANDWIDTH,
            &["read_write", "stores", "threads"],
        )
        .into_iter()
        .map(|b| Bar {
            label: format!(
                "{} thr",
                b.label
                    .replace(" plain ", " plain, ")
                    .replace(" nontemporal ", " nt, ")
            ),
            ..b
        })
        .collect()
    });
    out.extend(figure(
        plots::bars(
            &format!(
                "{} by read:write mix (STREAM counting)",
                bandwidth_of(sides, id::BANDWIDTH_MIX)
            ),
            "GB/s",
            &mixes,
        ),
        "Reads and writes mixed block by block (4 KiB) in the ratio shown; one thread and all threads; median with CI95.",
    ));
    // Plain and non-temporal stores are separate lines.
    let threads = overlaid_series(sides, |ms| {
        series_by(
            ms,
            id::BANDWIDTH_THREADS,
            metric::BANDWIDTH,
            "threads",
            "kernel stores",
        )
    });
    out.extend(figure(
        plots::lines(
            "bandwidth vs threads",
            XAxis::Count,
            ("threads", "GB/s"),
            &threads,
            &[],
            false,
        ),
        "Threads pinned one per core first, then SMT siblings.",
    ));
    out
}

/// IPC and files: times as bars (each transport's round trip on one cpu and across two, the
/// connection's cost; a file's create and delete by size), then each bandwidth over the message
/// or block size.
fn ipc(family: &str, sides: &[Drawn], _record: &RunRecord) -> Vec<Figure> {
    let files = family == "fs";
    let mut out = Vec::new();
    let times = overlaid_bars(sides, |ms| {
        ms.iter()
            .filter(|m| m.unit == Unit::Ns)
            .filter_map(|m| {
                let what = m.probe.split_once('.').map_or(m.probe.as_str(), |(_, w)| w);
                let label = match files {
                    true => format!(
                        "{} {}",
                        metric::words(&m.metric),
                        oslab_core::units::bytes(param(m, "bytes")?.as_u64()?)
                    ),
                    false => match m.param_text("placement") {
                        p if p.is_empty() => what.to_string(),
                        p => format!("{what} {p}"),
                    },
                };
                measured_bar(label, m)
            })
            .collect()
    });
    let (title, caption) = match files {
        true => (
            "a file created and deleted, by size",
            "Median with CI95: open(O_CREAT|O_EXCL), write and close; then unlink; one file at a time.",
        ),
        false => (
            "round trip of a 1-byte message, and a TCP connection",
            "Median with CI95: write, then read the echo of a thread on the same cpu or another; connect is socket, connect, accept and both closed.",
        ),
    };
    out.extend(figure(plots::bars(title, "ns", &times), caption));
    let (x, by, title, axis, caption) = match files {
        true => (
            "block_bytes",
            "method",
            "cached file read vs block size",
            "block size",
            "A file in the page cache read by pread, or copied out of a populated mapping, in blocks of the size shown.",
        ),
        false => (
            "message_bytes",
            "",
            "bandwidth vs message size",
            "message size",
            "Each transport streamed in writes of the size shown, read as it comes by a thread on another cpu (the same one on a 1-cpu machine).",
        ),
    };
    let streams = overlaid_series(sides, |ms| series_by(ms, family, metric::BANDWIDTH, x, by));
    out.extend(figure(
        plots::lines(title, XAxis::Bytes, (axis, "GB/s"), &streams, &[], false),
        caption,
    ));
    if files {
        out.extend(device(sides));
    }
    out
}

/// The named file probes that reach the device: the cache's edge as a file outgrows it, and a
/// 4 KiB read that misses the cache, alone and among readers.
fn device(sides: &[Drawn]) -> Vec<Figure> {
    let mut out = Vec::new();
    let curve = overlaid_series(sides, |ms| {
        series_by(ms, id::FS_CACHE_SIZE, metric::BANDWIDTH, "file_bytes", "")
    });
    out.extend(figure(
        plots::lines(
            "file re-read vs file size: the page cache's edge",
            XAxis::Bytes,
            ("file size", "GB/s"),
            &curve,
            &[],
            false,
        ),
        "A file grown by doubling, each size read once and then re-read: past the page cache's capacity the re-read goes to the device. The capacity row gives the bytes the cache kept (mincore).",
    ));
    let reads = overlaid_bars(sides, |ms| {
        ms.iter()
            .filter_map(|m| {
                let label = match m.probe.as_str() {
                    id::FS_UNCACHED_READ => format!("{} alone", m.param_text("access")),
                    id::FS_READERS => match m.param_text("readers").as_str() {
                        "1" => "random, 1 reader".to_string(),
                        n => format!("random, {n} readers"),
                    },
                    _ => return None,
                };
                measured_bar(label, m)
            })
            .collect()
    });
    out.extend(figure(
        plots::bars("a 4 KiB read that misses the page cache", "ns", &reads),
        "Median with CI95: reads of a file not in the cache (O_DIRECT, else dropped with fadvise, as each row says); readers are processes each reading its own file at once.",
    ));
    out
}

fn call(_family: &str, sides: &[Drawn], _record: &RunRecord) -> Vec<Figure> {
    let mut out = Vec::new();
    let calls = overlaid_bars(sides, |ms| {
        bar_list(ms, id::CALL_ARGS, metric::PER_CALL, &["args"])
    });
    out.extend(figure(
        plots::bars("procedure call cost by argument count", "ns", &calls),
        "Median with CI95.",
    ));
    out
}

fn costs(family: &str, sides: &[Drawn], _record: &RunRecord) -> Vec<Figure> {
    let mut out = cost_dots(family, sides);
    let swept = overlaid_series(sides, |ms| {
        let mut points: Vec<(f64, f64)> = ms
            .iter()
            .filter(|m| m.probe == id::TASK_FORK && m.metric == metric::ROUND_TRIP)
            .filter_map(|m| Some((m.params.get(TOUCHED)?.as_f64()? * MIB, median(m)? / 1e3)))
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        vec![Series {
            name: "fork round trip".into(),
            points,
            side: 0,
        }]
    });
    out.extend(figure(
        plots::lines("fork vs the memory its parent touched", XAxis::Bytes, ("memory the parent touched", "µs per fork"), &swept, &[], true),
        "fork + exit + wait from the minimal parent after it touched each size: fork copies the page tables of what the parent maps (the fit's fixed cost and cost per MiB are in the table).",
    ));
    out
}

/// A family's costs as dot plots on one log axis (24 operations a chart).
fn cost_dots(family: &str, sides: &[Drawn]) -> Vec<Figure> {
    // A row a comparison judged changed carries its change in its label, on every side.
    let changed = |m: &Measurement| {
        sides
            .iter()
            .find_map(|s| s.changed.get(&oslab_core::stats::compare::key(m)))
    };
    let bars_of = |ms: &[&Measurement]| -> Vec<Bar> {
        let labelled: Vec<(String, &Measurement)> = ms
            .iter()
            // One operation's time on one axis: a fault's, not also per page and per byte;
            // not fork's cost per MiB its parent touched (a time per amount, not per fork).
            // Nor fork's times after its parent touched memory: a sweep, drawn as a line below.
            .filter(|m| {
                m.unit == Unit::Ns
                    && ![metric::PER_PAGE, metric::PER_BYTE, metric::COST_PER_MIB]
                        .contains(&m.metric.as_str())
                    && m.param_text(TOUCHED).is_empty()
            })
            .map(|m| (cost_label(m), *m))
            .collect();
        distinct(labelled)
            .into_iter()
            .map(|(label, m)| match changed(m) {
                Some(c) => (format!("{label}  {c}"), m),
                None => (label, m),
            })
            .filter_map(|(label, m)| measured_bar(label, m))
            .collect()
    };
    let caption = format!(
        "Median with CI95 of each {family} measurement on one log axis{}{}{}.",
        match Family::of(family) {
            Some(Family::Faults) => ": a fault's time (per page and per byte are in the table)",
            Some(Family::Task) =>
                ": creation and round trip (fork's cost per MiB its parent touched is in the table)",
            Some(Family::Syscall) => ", hot (back to back) beside cold (caches evicted first)",
            Some(Family::Switch) =>
                ": the switch on one cpu, the hand-over and the wake-up across two",
            _ => "",
        },
        match sides.len() {
            1 => String::new(),
            _ => format!(
                "; {}, the first on top in each row",
                sides
                    .iter()
                    .zip(plots::COLOUR_NAMES.iter().cycle())
                    .map(|(s, c)| format!("{} {c}", s.label))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
        match sides.iter().any(|s| !s.changed.is_empty()) {
            true => "; ▲ worse, ▼ better, ◆ changed: the rows the comparison judged changed",
            false => "",
        }
    );
    // Every cost on one log axis, labels in order so that one operation's hot and cold sit
    // together; the runs compared share each row.
    let mut list: Vec<Bar> = sides
        .iter()
        .enumerate()
        .flat_map(|(k, side)| {
            bars_of(&side.ms).into_iter().map(move |mut b| {
                b.side = k;
                b
            })
        })
        .collect();
    list.sort_by(|a, b| a.label.cmp(&b.label).then(a.side.cmp(&b.side)));
    let mut labels: Vec<&str> = list.iter().map(|b| b.label.as_str()).collect();
    labels.dedup();
    // At most 24 operations a chart: more are drawn in the next one, never dropped.
    let parts: Vec<&[&str]> = labels.chunks(24).collect();
    let mut out = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let chunk: Vec<Bar> = list
            .iter()
            .filter(|b| part.contains(&b.label.as_str()))
            .cloned()
            .collect();
        let mut title = format!("{family} costs");
        if parts.len() > 1 {
            title += &format!(" ({} of {})", i + 1, parts.len());
        }
        out.extend(figure(plots::dots(&title, &chunk), &caption));
    }
    out
}

/// The parameter of fork's times after its parent touched memory, in MiB.
const TOUCHED: &str = "touched_mib";
const MIB: f64 = (1u64 << 20) as f64;

/// A cost's label: the probe without its family, the metric, and the cache state when there
/// is one.
fn cost_label(m: &Measurement) -> String {
    let extra = match m.param_text("cache") {
        c if c.is_empty() => c,
        c => format!(" {c}"),
    };
    format!(
        "{} {}{extra}",
        m.probe.split('.').skip(1).collect::<Vec<_>>().join("."),
        metric::words(&m.metric)
    )
}

fn numa(_family: &str, sides: &[Drawn], _record: &RunRecord) -> Vec<Figure> {
    sides
        .iter()
        .filter_map(|side| {
            let (svg, caption) = numa_chart(&side.ms)?;
            Some(match sides.len() {
                1 => (svg, caption),
                _ => (svg, format!("{}: {caption}", side.label)),
            })
        })
        .collect()
}

fn migrate(_family: &str, sides: &[Drawn], _record: &RunRecord) -> Vec<Figure> {
    let mut out = Vec::new();
    let times = overlaid_bars(sides, |ms| {
        bar_list(ms, id::MIGRATE, metric::TIME, &["kernel", "variant"])
    });
    let costs: Vec<String> = sides
        .iter()
        .map(|side| match sides.len() {
            1 => migrate_costs(&side.ms),
            _ => format!("{}: {}", side.label, migrate_costs(&side.ms)),
        })
        .collect();
    out.extend(figure(
        plots::bars("execution time, pinned vs migrated", "ns", &times),
        &format!("Median of the runs, CI95. {}", costs.join(" ")),
    ));
    for phase in ["phase1", "phase2"] {
        let metric = format!("L2 miss rate {phase}");
        let rates = overlaid_bars(sides, |ms| {
            bar_list(ms, id::MIGRATE, &metric, &["kernel", "variant"])
        });
        if !rates.is_empty() {
            out.extend(figure(
                plots::bars(
                    &format!("L2 miss rate, {phase}"),
                    "misses / accesses",
                    &rates,
                ),
                "From the L2_TCM / L2_TCA presets.",
            ));
        }
    }
    out
}

/// The costs a migrate run found, per kernel, in words: the answer the time chart is for.
fn migrate_costs(ms: &[&Measurement]) -> String {
    let costs = [
        (metric::MIGRATION_COST, "Migration cost (second half on B after the move less pinned on B, the pages left behind)"),
        (metric::MIGRATION_COST_PAGES_FOLLOW, "With the pages following"),
        (metric::REMOTE_MEMORY_COST, "Remote memory (pinned on B, pages on A's node less on B's)"),
    ];
    costs
        .iter()
        .filter_map(|(name, what)| {
            let per_kernel: Vec<String> = ms
                .iter()
                .filter(|m| m.probe == id::MIGRATE && m.metric == *name)
                .map(|m| {
                    let kernel = m.param_text("kernel");
                    match m.summary.as_ref().filter(|_| m.status.has_value()) {
                        Some(s) => format!(
                            "{kernel} {}{}{}",
                            value(s.median, m.unit),
                            s.interval().map_or(String::new(), |(lo, hi)| format!(
                                " (CI95 {} to {})",
                                value(lo, m.unit),
                                value(hi, m.unit)
                            )),
                            match m.difference_spans_zero() {
                                true => ", within noise of 0",
                                false => "",
                            }
                        ),
                        None => format!("{kernel} {}", m.status.word()),
                    }
                })
                .collect();
            (!per_kernel.is_empty()).then(|| format!("{what}: {}.", per_kernel.join("; ")))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The simulated shuffling study: execution time with shuffling over without (the same random
/// stream) per workload, then per monitoring interval; whiskers span the random streams.
fn shuffle_sim(_family: &str, sides: &[Drawn], _record: &RunRecord) -> Vec<Figure> {
    let mut out = Vec::new();
    for (part, title) in [
        (
            "workload",
            "time with shuffling / without, by lock contention",
        ),
        (
            "interval sweep",
            "time with shuffling / without, by monitoring interval",
        ),
    ] {
        let bars = overlaid_bars(sides, |ms| {
            ms.iter()
                .filter(|m| m.metric == "change" && m.param_text("part") == part)
                .filter_map(|m| {
                    let s = m.summary.as_ref()?;
                    let label = match part {
                        "workload" => m.param_text("workload"),
                        _ => format!("{} ms", param(m, "interval_ms")?.as_f64()?),
                    };
                    Some(Bar {
                        label,
                        value: 1.0 + s.median,
                        interval: Some((1.0 + s.min, 1.0 + s.max)),
                        side: 0,
                    })
                })
                .collect()
        });
        if !bars.is_empty() {
            out.extend(figure(
                plots::bars(title, "time with / without", &bars),
                "Simulated: median over the randomised runs (each pair with and without shares its random draws), whiskers from the best to the worst run; below 1, shuffling made the program faster.",
            ));
        }
    }
    out
}

/// Labels that say which is which: where several measurements share a label, each gets the
/// parameters that differ among them (`fork round_trip` four times becomes `... touched=64 MiB`).
fn distinct(labelled: Vec<(String, &Measurement)>) -> Vec<(String, &Measurement)> {
    let same: Vec<Vec<usize>> = labelled
        .iter()
        .map(|(l, _)| {
            labelled
                .iter()
                .enumerate()
                .filter(|(_, (o, _))| o == l)
                .map(|(i, _)| i)
                .collect()
        })
        .collect();
    labelled
        .iter()
        .zip(&same)
        .map(|((label, m), group)| {
            if group.len() < 2 {
                return (label.clone(), *m);
            }
            let differs: Vec<String> = m
                .params
                .iter()
                .filter(|(k, v)| {
                    k.as_str() != "cpu"
                        && group
                            .iter()
                            .any(|&j| labelled[j].1.params.get(k.as_str()) != Some(v))
                })
                .map(|(k, _)| format!("{k}={}", m.param_text(k)))
                .collect();
            (
                format!("{label} {}", differs.join(" "))
                    .trim_end()
                    .to_string(),
                *m,
            )
        })
        .collect()
}

fn bar_list(ms: &[&Measurement], prefix: &str, metric: &str, keys: &[&str]) -> Vec<Bar> {
    ms.iter()
        .filter(|m| m.probe.starts_with(prefix) && m.metric == metric)
        .filter_map(|m| {
            let label = keys
                .iter()
                .map(|k| m.param_text(k))
                .collect::<Vec<_>>()
                .join(" ");
            measured_bar(label, m)
        })
        .collect()
}

/// A bar of a measurement's median with its CI95, when it has a value.
fn measured_bar(label: String, m: &Measurement) -> Option<Bar> {
    let s = m.summary.as_ref()?;
    Some(Bar {
        label,
        value: median(m)?,
        interval: s.interval(),
        side: 0,
    })
}

/// A heatmap cell of `m`: its `row` and `column` parameters and its median.
fn cell(m: &Measurement, row: &str, column: &str) -> Option<(u64, u64, f64)> {
    Some((
        param(m, row)?.as_u64()?,
        param(m, column)?.as_u64()?,
        median(m)?,
    ))
}

/// A heatmap's rows and columns, ascending, and its values (None where a row and a column have
/// no cell).
type Grid = (Vec<u64>, Vec<u64>, Vec<Vec<Option<f64>>>);

/// The [`Grid`] of `cells`.
fn grid(cells: &[(u64, u64, f64)]) -> Grid {
    let axis = |pick: fn(&(u64, u64, f64)) -> u64| {
        let mut v: Vec<u64> = cells.iter().map(pick).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let (rows, cols) = (axis(|c| c.0), axis(|c| c.1));
    let values = rows
        .iter()
        .map(|&r| {
            cols.iter()
                .map(|&c| cells.iter().find(|x| x.0 == r && x.1 == c).map(|x| x.2))
                .collect()
        })
        .collect();
    (rows, cols, values)
}

fn numa_chart(ms: &[&Measurement]) -> Option<Figure> {
    let cells: Vec<(u64, u64, f64)> = ms
        .iter()
        .filter(|m| m.metric == "bandwidth" && m.param_text("kernel") == "average")
        .filter_map(|m| cell(m, "cpu_node", "mem_node"))
        .collect();
    if cells.len() < 2 {
        return None; // one node: a 1x1 matrix compares nothing; the table has its figure
    }
    let (rows, cols, values) = grid(&cells);
    let local = |r: u64| cells.iter().find(|c| c.0 == r && c.1 == r).map(|c| c.2);
    let svg = plots::heatmap(
        "NUMA bandwidth, GB/s (ratio to local)",
        // Nodes, not cpus: `cpu 0` read as cpu 0 alone.
        &rows
            .iter()
            .map(|r| format!("node {r} cpus"))
            .collect::<Vec<_>>(),
        &cols
            .iter()
            .map(|c| format!("node {c} memory"))
            .collect::<Vec<_>>(),
        &values,
        // (The colour scale asks for its ends' text with no cell: no ratio then.)
        &|r, _, v| match rows.get(r).and_then(|&r| local(r)).filter(|l| *l > 0.0) {
            Some(l) => format!("{} ({:.2})", num(v), v / l),
            None => num(v),
        },
    );
    figure(
        svg,
        "Average of STREAM copy/scale/add/triad per cell; rows: cpu node, columns: memory node.",
    )
}

/// Core-to-core latency: one heatmap per side, from row to column (both directions show the
/// pair's one measurement).
fn c2c(_family: &str, sides: &[Drawn], _record: &RunRecord) -> Vec<Figure> {
    sides
        .iter()
        .filter_map(|side| {
            let cells: Vec<(u64, u64, f64)> = side
                .ms
                .iter()
                .filter(|m| m.probe == id::C2C_LATENCY)
                .filter_map(|m| cell(m, "from", "to"))
                .collect();
            let mut cpus: Vec<u64> = cells.iter().flat_map(|c| [c.0, c.1]).collect();
            cpus.sort_unstable();
            cpus.dedup();
            // One pair is a number, which the table gives: a 2x2 heatmap says nothing more.
            if cpus.len() < 3 {
                return None;
            }
            let values: Vec<Vec<Option<f64>>> = cpus
                .iter()
                .map(|&r| {
                    cpus.iter()
                        .map(|&c| {
                            cells
                                .iter()
                                .find(|x| (x.0, x.1) == (r, c) || (x.0, x.1) == (c, r))
                                .map(|x| x.2)
                        })
                        .collect()
                })
                .collect();
            let labels: Vec<String> = cpus.iter().map(|c| format!("cpu {c}")).collect();
            let title = match sides.len() {
                1 => "core-to-core latency, one way, ns".to_string(),
                _ => format!("core-to-core latency, one way, ns ({})", side.label),
            };
            figure(
                plots::heatmap(&title, &labels, &labels, &values, &|_, _, v| num(v)),
                "Half a compare-and-swap round trip of one cache line between the two cpus; blank: the cpu itself, or a pair not sampled.",
            )
        })
        .collect()
}

/// The timeline chart (its first 100 ms).
pub fn timeline_chart(events: &[TimelineEvent]) -> Option<Figure> {
    // A CPU-manager run (it has allocation events) is shown whole, its CPUs coloured by job.
    let cpuman = events.iter().any(|e| e.kind == EventKind::Alloc);
    let label = |e: &TimelineEvent| match (cpuman, e.args.get("job")) {
        (true, Some(job)) if e.kind == EventKind::Run => format!("job {job}"),
        _ => e.kind.to_string(),
    };
    let mut tracks: Vec<Track> = Vec::new();
    let mut kinds: Vec<String> = Vec::new();
    for e in events {
        let name = label(e);
        let kind = kinds.iter().position(|k| *k == name).unwrap_or_else(|| {
            kinds.push(name);
            kinds.len() - 1
        });
        let i = match tracks.iter().position(|t| t.name == e.track) {
            Some(i) => i,
            None => {
                tracks.push(Track {
                    name: e.track.clone(),
                    spans: Vec::new(),
                });
                tracks.len() - 1
            }
        };
        tracks[i].spans.push((e.start_ns, e.dur_ns, kind));
    }
    // The first 100 ms: enough to see ticks and slices without blurring them together.
    let whole = events
        .iter()
        .map(|e| e.start_ns + e.dur_ns)
        .fold(0.0, f64::max);
    let (end, title) = if cpuman {
        (whole, "threads on cpus and jobs over the run")
    } else {
        (whole.min(100e6), "timeline (first 100 ms)")
    };
    let kinds: Vec<&str> = kinds.iter().map(String::as_str).collect();
    figure(
        plots::timeline(title, &tracks, end, &kinds),
        &format!(
            "{} events; the first {} shown. Export the whole timeline with `oslab export RUN --format perfetto`.",
            events.len(),
            value(end, Unit::Ns)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stride_table_is_a_heatmap_of_working_set_by_stride() {
        let ms: Vec<Measurement> = [
            (4096u64, 8u64, 1.2),
            (4096, 64, 1.2),
            (1 << 20, 8, 1.3),
            (1 << 20, 64, 3.5),
        ]
        .into_iter()
        .map(|(size, stride, v)| {
            let mut m = Measurement::not_taken(
                id::MEMORY_LATENCY_STRIDE,
                oslab_core::params! {"size" => size, "stride" => stride, "cpu" => 0},
                metric::PER_LOAD,
                Unit::Ns,
                oslab_core::Status::Ok,
            );
            m.summary = oslab_core::Summary::new(&[v, v, v]);
            m
        })
        .collect();
        let side = Drawn {
            label: String::new(),
            ms: ms.iter().collect(),
            changed: Changed::new(),
        };
        let f = stride_table(&side).expect("a heatmap");
        assert!(
            f.0.contains("working set (rows) x stride (columns)"),
            "{}",
            f.0
        );
        assert!(f.0.contains("1 MiB") && f.0.contains("3.5"), "{}", f.0);
        // One size, or one stride: nothing to draw as a table.
        let one = Drawn {
            label: String::new(),
            ms: ms.iter().take(2).collect(),
            changed: Changed::new(),
        };
        assert!(stride_table(&one).is_none());
    }

    #[test]
    fn costs_orders_of_magnitude_apart_share_one_chart_hot_beside_cold() {
        // A 1 ns call, 100-200 ns system calls and a 3.8 us trap: one chart on a log axis (they
        // were cut into charts of one bar each), one operation's hot and cold on rows together.
        let cost = |probe: &str, cache: &str, v: f64| {
            let mut m = Measurement::not_taken(
                probe,
                oslab_core::params! {"cache" => cache, "cpu" => 0},
                metric::PER_CALL,
                Unit::Ns,
                oslab_core::Status::Ok,
            );
            m.summary = oslab_core::Summary::new(&[v * 0.99, v, v * 1.01]);
            m
        };
        let ms = [
            cost("syscall.getppid", "hot", 119.0),
            cost("syscall.time.vdso", "hot", 1.2),
            cost("syscall.cpuid", "hot", 3780.0),
            cost("syscall.getppid", "cold", 210.0),
        ];
        let figures = cost_dots("syscall", &alone(&ms.iter().collect::<Vec<_>>()));
        assert_eq!(figures.len(), 1, "one chart");
        let svg = &figures[0].0;
        // Where a text is drawn, down the chart.
        let y = |t: &str| -> f64 {
            let end = svg
                .find(&format!(">\n{t}\n</text>"))
                .unwrap_or_else(|| panic!("{t} in {svg}"));
            let tag = &svg[svg[..end].rfind("<text").unwrap()..end];
            let at = tag.find(" y=\"").unwrap() + 4;
            tag[at..at + tag[at..].find('"').unwrap()].parse().unwrap()
        };
        // Rows from the top in label order: cpuid, getppid cold, getppid hot, time.vdso.
        let rows = [
            "cpuid call hot",
            "getppid call cold",
            "getppid call hot",
            "time.vdso call hot",
        ];
        assert!(rows.windows(2).all(|w| y(w[0]) < y(w[1])), "{svg}");
        for v in ["1.20 ns", "119 ns", "3.78 µs", "10 ns", "1 µs"] {
            y(v);
        }
    }
}
