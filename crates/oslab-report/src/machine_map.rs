//! The machine drawn, as lstopo draws it, with what this run measured on it: packages, the
//! NUMA nodes within a package, last-level cache domains and cores (their cpus), then the
//! core-to-core latency of each topology class and the memory latency from each cpu node.

use crate::markup::escape;
use oslab_core::binding::{hidden_siblings, Costs};
use oslab_core::cpuset::CpuSet;
use oslab_core::model::Measurement;
use oslab_core::topology::Topology;
use oslab_core::units::num;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Drawing width in user units: the page shows it at about this many pixels (1,200 px wide
/// body), so 14-unit text reads at 14 px.
const WIDTH: f64 = 1160.0;
const FONT: f64 = 14.0;
const CORE_W: f64 = 64.0;
const CORE_H: f64 = 34.0;
const PAD: f64 = 10.0;

/// The drawing (an `<svg>`), and its caption.
pub fn figure(t: &Topology, ms: &[Measurement]) -> Option<(String, String)> {
    if t.cpus.is_empty() {
        return None;
    }
    let costs = Costs::from_measurements(ms);
    let hidden = hidden_siblings(&costs.pairs, |a, b| t.pair_class(a, b));
    let marked: CpuSet = hidden.iter().flat_map(|h| [h.cpus.0, h.cpus.1]).collect();
    let mut packages: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for c in &t.cpus {
        packages.entry(c.package).or_default().push(c.id);
    }
    let per_row = packages.len().clamp(1, 2);
    let box_w = (WIDTH - PAD * (per_row as f64 + 1.0)) / per_row as f64;
    let mut canvas = Canvas {
        t,
        marked,
        out: String::new(),
    };
    let (mut x, mut y, mut row_h) = (PAD, PAD, 0.0f64);
    for (i, (p, cpus)) in packages.iter().enumerate() {
        if i > 0 && i % per_row == 0 {
            (x, y) = (PAD, y + row_h + PAD);
            row_h = 0.0;
        }
        let h = canvas.package(*p, cpus, At { x, y, w: box_w });
        row_h = row_h.max(h);
        x += box_w + PAD;
    }
    let mut lines = cost_lines(t, &costs);
    if !hidden.is_empty() {
        let pairs: Vec<String> = hidden
            .iter()
            .map(|h| format!("{} & {} {} ns", h.cpus.0, h.cpus.1, num(h.ns)))
            .collect();
        lines.push(format!(
            "red: cpus handing a line over as SMT siblings do, which the topology does not show ({}); oslab bind --policy by-cost keeps them apart",
            pairs.join(", ")
        ));
    }
    let mut body = canvas.out;
    let mut ty = y + row_h + PAD + FONT;
    for l in &lines {
        let _ = writeln!(
            body,
            "<text x=\"{PAD}\" y=\"{ty}\" font-size=\"{FONT}\">{}</text>",
            escape(l)
        );
        ty += FONT * 1.5;
    }
    let height = ty;
    let svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {height}\" width=\"100%\" style=\"max-width:{WIDTH}px\" font-family=\"system-ui,sans-serif\" role=\"img\"><title>the machine</title>\n{body}</svg>"
    );
    let caption = format!(
        "the machine: {}; a box per core, its cpus inside{}",
        t.shape(),
        match costs.is_empty() {
            true => "",
            false => ", with this run's measured costs under it",
        }
    );
    Some((svg, caption))
}

/// Where a box goes: its top left corner and its width (its height is what it holds).
#[derive(Clone, Copy)]
struct At {
    x: f64,
    y: f64,
    w: f64,
}

/// The drawing as it is made: the machine, the cpus to mark, the SVG so far.
struct Canvas<'a> {
    t: &'a Topology,
    marked: CpuSet,
    out: String,
}

impl Canvas<'_> {
    /// One package's box: its nodes (where it has several), each node's or the package's
    /// last-level cache domains, and their cores. Returns its height.
    fn package(&mut self, p: usize, cpus: &[usize], at: At) -> f64 {
        let t = self.t;
        let nodes: Vec<&oslab_core::topology::Node> = t
            .nodes
            .iter()
            .filter(|n| n.cpus.iter().any(|c| cpus.contains(&c)))
            .collect();
        let node_label = nodes
            .iter()
            .map(|n| n.id.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let groups: Vec<(String, Vec<usize>)> = if nodes.len() > 1 {
            nodes
                .iter()
                .map(|n| {
                    let mine = cpus
                        .iter()
                        .copied()
                        .filter(|&c| n.cpus.contains(c))
                        .collect();
                    (format!("node {}", n.id), mine)
                })
                .collect()
        } else {
            llc_domains(t, cpus)
        };
        // The package's box goes under what it holds: drawn after them, it would cover them.
        let outer = std::mem::take(&mut self.out);
        let mut inner_y = at.y + FONT * 1.8;
        for (label, group) in &groups {
            let inside = At {
                x: at.x + PAD,
                y: inner_y,
                w: at.w - 2.0 * PAD,
            };
            inner_y += self.domain(label, group, inside) + PAD;
        }
        let h = inner_y - at.y;
        let held = std::mem::replace(&mut self.out, outer);
        let _ = writeln!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{h}\" rx=\"6\" fill=\"#f4f6fa\" stroke=\"#556\"/>\n<text x=\"{}\" y=\"{}\" font-size=\"{FONT}\" font-weight=\"bold\">package {p} · NUMA node {}</text>",
            at.x,
            at.y,
            at.w,
            at.x + PAD,
            at.y + FONT * 1.3,
            escape(&node_label)
        );
        self.out.push_str(&held);
        h
    }

    /// A labelled box of cores. Returns its height.
    fn domain(&mut self, label: &str, cpus: &[usize], at: At) -> f64 {
        let cores = self.t.cores_among(&cpus.iter().copied().collect());
        let per_line = (((at.w - PAD) / (CORE_W + 6.0)).floor() as usize).max(1);
        let rows = cores.len().div_ceil(per_line);
        let h = FONT * 1.6 + rows as f64 * (CORE_H + 6.0) + PAD;
        let _ = writeln!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{h}\" rx=\"4\" fill=\"#fff\" stroke=\"#99a\"/>\n<text x=\"{}\" y=\"{}\" font-size=\"{FONT}\">{}</text>",
            at.x,
            at.y,
            at.w,
            at.x + PAD,
            at.y + FONT * 1.2,
            escape(label)
        );
        for (i, core) in cores.iter().enumerate() {
            let cx = at.x + PAD + (i % per_line) as f64 * (CORE_W + 6.0);
            let cy = at.y + FONT * 1.6 + (i / per_line) as f64 * (CORE_H + 6.0);
            let hot = core.iter().any(|&c| self.marked.contains(c));
            let ids: Vec<String> = core.iter().map(usize::to_string).collect();
            let _ = writeln!(
                self.out,
                "<rect x=\"{cx}\" y=\"{cy}\" width=\"{CORE_W}\" height=\"{CORE_H}\" rx=\"3\" fill=\"#dde6f3\" stroke=\"{}\" stroke-width=\"{}\"/><text x=\"{}\" y=\"{}\" font-size=\"{FONT}\" text-anchor=\"middle\">{}</text>",
                if hot { "#c0392b" } else { "#7a8aa6" },
                if hot { 3 } else { 1 },
                cx + CORE_W / 2.0,
                cy + CORE_H / 2.0 + FONT / 3.0,
                ids.join(" ")
            );
        }
        h
    }
}

/// The last-level cache domains among `cpus`, labelled with their size.
fn llc_domains(t: &Topology, cpus: &[usize]) -> Vec<(String, Vec<usize>)> {
    let Some(level) = t.last_level_cache().map(|c| c.level) else {
        return vec![(String::new(), cpus.to_vec())];
    };
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for c in t.caches.iter().filter(|c| c.level == level) {
        let mine: Vec<usize> = cpus
            .iter()
            .copied()
            .filter(|&x| c.cpus.contains(x))
            .collect();
        if !mine.is_empty() {
            let label = format!("L{level} {}", oslab_core::units::bytes(c.size));
            out.push((label, mine));
        }
    }
    if out.is_empty() {
        out.push((String::new(), cpus.to_vec()));
    }
    out
}

/// The costs measured on the machine, a line per kind: core to core by topology class, memory
/// from each cpu node.
fn cost_lines(t: &Topology, costs: &Costs) -> Vec<String> {
    let mut out = Vec::new();
    let mut classes: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (&(a, b), &ns) in &costs.pairs {
        classes.entry(t.pair_class(a, b)).or_default().push(ns);
    }
    if !classes.is_empty() {
        let parts: Vec<String> = classes
            .into_iter()
            .map(|(class, mut v)| {
                v.sort_by(f64::total_cmp);
                let mid = oslab_core::stats::median(&v).unwrap_or(f64::NAN);
                format!("{class} {} ns", num(mid))
            })
            .collect();
        out.push(format!(
            "core to core, one way (median of the measured pairs): {}",
            parts.join(" · ")
        ));
    }
    let mut from: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (&(cpu_node, mem_node), &ns) in &costs.memory {
        from.entry(cpu_node)
            .or_default()
            .push(format!("node {mem_node} {} ns", num(ns)));
    }
    for (node, cells) in from {
        out.push(format!(
            "memory latency from cpu node {node}: {}",
            cells.join(" · ")
        ));
    }
    if out.is_empty() {
        out.push(
            "no core-to-core or NUMA latency in this run (oslab c2c, oslab numa measure them)"
                .into(),
        );
    }
    out
}
