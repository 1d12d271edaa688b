//! Interrupt counts of one CPU from /proc/interrupts, so what a probe saw (gaps in a busy loop)
//! can be set beside what the kernel counted (local timer, rescheduling and function-call IPIs,
//! device interrupts).

use std::collections::BTreeMap;

/// Count per interrupt source for one CPU, keyed by a readable name ("LOC: Local timer
/// interrupts", "26: ttyS0").
pub type Counts = BTreeMap<String, u64>;

/// Parses /proc/interrupts text and returns the counts of `cpu`'s column.
pub fn parse(text: &str, cpu: usize) -> Counts {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    let Some(col) = header.iter().position(|h| *h == format!("CPU{cpu}")) else {
        return Counts::new();
    };
    let cpus = header.len();
    let mut out = Counts::new();
    for line in lines {
        let Some((label, rest)) = line.split_once(':') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let Some(count) = fields.get(col).and_then(|v| v.parse::<u64>().ok()) else {
            continue; // ERR:/MIS: lines have one total, not a column per cpu
        };
        let what = fields.get(cpus..).map(|d| d.join(" ")).unwrap_or_default();
        // Device lines end with the driver name; keep only it after the controller fields.
        let what = if label.trim().chars().all(|c| c.is_ascii_digit()) {
            what.split_whitespace().last().unwrap_or("").to_string()
        } else {
            what
        };
        out.insert(format!("{}: {}", label.trim(), what), count);
    }
    out
}

/// The counts of `cpu` now.
pub fn snapshot(cpu: usize) -> Counts {
    std::fs::read_to_string("/proc/interrupts")
        .map(|t| parse(&t, cpu))
        .unwrap_or_default()
}

/// What changed between two snapshots (sources with a non-zero delta, largest first).
pub fn delta(before: &Counts, after: &Counts) -> Vec<(String, u64)> {
    let mut d: Vec<(String, u64)> = after
        .iter()
        .map(|(k, v)| (k.clone(), v.saturating_sub(*before.get(k).unwrap_or(&0))))
        .filter(|(_, v)| *v > 0)
        .collect();
    d.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    d
}

/// The local-timer count in a delta (the "LOC" line on x86, "arch_timer" on arm64).
pub fn local_timer(delta: &[(String, u64)]) -> Option<u64> {
    delta
        .iter()
        .find(|(k, _)| k.starts_with("LOC:") || k.contains("arch_timer"))
        .map(|(_, v)| *v)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "           CPU0       CPU1       
 26:          0         14  IO-APIC   4-edge      ttyS0
LOC:     438825     558625   Local timer interrupts
RES:      44784      41523   Rescheduling interrupts
ERR:          0
";

    #[test]
    fn columns_and_names() {
        let c = parse(TEXT, 1);
        assert_eq!(c["LOC: Local timer interrupts"], 558625);
        assert_eq!(c["26: ttyS0"], 14);
        assert_eq!(c.len(), 3);
        assert!(parse(TEXT, 5).is_empty());
    }

    #[test]
    fn deltas_are_sorted_and_find_the_timer() {
        let a = parse(TEXT, 1);
        let mut b = a.clone();
        *b.get_mut("LOC: Local timer interrupts").unwrap() += 250;
        *b.get_mut("RES: Rescheduling interrupts").unwrap() += 3;
        let d = delta(&a, &b);
        assert_eq!(d[0], ("LOC: Local timer interrupts".to_string(), 250));
        assert_eq!(d.len(), 2);
        assert_eq!(local_timer(&d), Some(250));
        // The real file parses for a cpu we run on.
        assert!(!snapshot(0).is_empty());
    }
}
