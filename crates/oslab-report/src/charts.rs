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

fn figure(svg: Result<String, String>, caption: &str) -> Option<Figure> {
    svg.ok().map(|s| (s, caption.to_string()))
}

pub(crate) fn figure_html((svg, caption): &Figure) -> String {
    format!(
        "<figure>{svg}<figcaption>{}</figcaption></figure>\n",
        escape(caption)
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
fn cache_marks(ms: &[&Measurement], record: &RunRecord) -> Vec<Mark> {
    let mut marks: Vec<Mark> = record.fingerprint["topology"]["caches"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["kind"] != "instruction")
        .filter_map(|c| {
            let size = c["size"].as_u64()?;
            Some(Mark {
                x: size as f64,
                label: format!("L{} {} (sysfs)", c["level"], oslab_core::units::bytes(size)),
            })
        })
        .collect();
    marks.sort_by(|a, b| a.x.total_cmp(&b.x));
    marks.dedup_by(|a, b| a.x == b.x);
    for m in ms.iter().filter(|m| m.metric == "level_size") {
        if let Some(size) = median(m) {
            marks.push(Mark {
                x: size,
                label: format!("{} seen", m.param_text("level")),
            });
        }
    }
    marks
}

/// What one chart overlay draws: a run, or runs taken together, pooled.
pub struct Drawn<'a> {
    /// How the legend names it ("run 3", "tag kernel=6.18").
    pub label: String,
    /// Its measurements.
    pub ms: Vec<&'a Measurement>,
}

/// One run drawn alone.
pub(crate) fn alone<'a>(ms: &[&'a Measurement]) -> [Drawn<'a>; 1] {
    [Drawn {
        label: String::new(),
        ms: ms.to_vec(),
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
        &format!("Dependent loads, one per cache line; vertical lines: cache sizes sysfs claims and the levels the chunk curve shows; {}.", dashes(sides)),
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
    out
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
    let mut out = Vec::new();
    let mut list = overlaid_bars(sides, |ms| {
        let labelled: Vec<(String, &Measurement)> = ms
            .iter()
            // One operation's time on one axis: a fault's, not also per page and per byte;
            // not fork's cost per MiB its parent touched (a time per amount, not per fork).
            .filter(|m| {
                m.unit == Unit::Ns
                    && ![metric::PER_PAGE, metric::PER_BYTE, metric::COST_PER_MIB]
                        .contains(&m.metric.as_str())
            })
            .map(|m| {
                let cache = m.param_text("cache");
                let label = format!(
                    "{} {}{}",
                    m.probe.split('.').skip(1).collect::<Vec<_>>().join("."),
                    m.metric,
                    if cache.is_empty() {
                        String::new()
                    } else {
                        format!(" {cache}")
                    }
                );
                (label, *m)
            })
            .collect();
        distinct(labelled)
            .into_iter()
            .filter_map(|(label, m)| measured_bar(label, m))
            .collect()
    });
    list.truncate(16 * sides.len());
    out.extend(figure(
        plots::bars(&format!("{family} costs"), "ns", &list),
        &format!(
            "Median with CI95 of each {family} measurement{}.",
            match Family::of(family) {
                Some(Family::Faults) => ": a fault's time (per page and per byte are in the table)",
                Some(Family::Task) => ": creation and round trip (fork's cost per MiB its parent touched is in the table)",
                Some(Family::Syscall) => ", hot (back to back) and cold (caches evicted first)",
                Some(Family::Switch) => ": the switch on one cpu, the hand-over and the wake-up across two",
                _ => "",
            }
        ),
    ));
    out
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
    out.extend(figure(
        plots::bars("execution time, pinned vs migrated", "ns", &times),
        "Median of the runs, CI95.",
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

fn numa_chart(ms: &[&Measurement]) -> Option<Figure> {
    let cells: Vec<(u64, u64, f64)> = ms
        .iter()
        .filter(|m| m.metric == "bandwidth" && m.param_text("kernel") == "average")
        .filter_map(|m| {
            Some((
                param(m, "cpu_node")?.as_u64()?,
                param(m, "mem_node")?.as_u64()?,
                median(m)?,
            ))
        })
        .collect();
    if cells.len() < 2 {
        return None; // one node: a 1x1 matrix compares nothing; the table has its figure
    }
    let mut rows: Vec<u64> = cells.iter().map(|c| c.0).collect();
    let mut cols: Vec<u64> = cells.iter().map(|c| c.1).collect();
    rows.sort_unstable();
    rows.dedup();
    cols.sort_unstable();
    cols.dedup();
    let local = |r: u64| cells.iter().find(|c| c.0 == r && c.1 == r).map(|c| c.2);
    let values: Vec<Vec<Option<f64>>> = rows
        .iter()
        .map(|&r| {
            cols.iter()
                .map(|&c| cells.iter().find(|x| x.0 == r && x.1 == c).map(|x| x.2))
                .collect()
        })
        .collect();
    let svg = plots::heatmap(
        "NUMA bandwidth, GB/s (ratio to local)",
        &rows.iter().map(|r| format!("cpu {r}")).collect::<Vec<_>>(),
        &cols.iter().map(|c| format!("mem {c}")).collect::<Vec<_>>(),
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
                .filter_map(|m| {
                    let (a, b) = (param(m, "from")?.as_u64()?, param(m, "to")?.as_u64()?);
                    Some((a, b, median(m)?))
                })
                .collect();
            let mut cpus: Vec<u64> = cells.iter().flat_map(|c| [c.0, c.1]).collect();
            cpus.sort_unstable();
            cpus.dedup();
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
