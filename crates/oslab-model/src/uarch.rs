//! Published figures per CPU microarchitecture, looked up by cpuid vendor, family and model (or
//! an Arm core's implementer and part number).
//!
//! Latencies are load-to-use cycles of a dependent pointer chase (`mov rax, [rax]`); bandwidths
//! are bytes per core cycle with the 256-bit vectors oslab's kernels use; the DRAM figure is the
//! idle latency typical of platforms built on the core (the DIMMs and the uncore differ between
//! machines: it is the least certain figure here). The sources are vendors' optimization manuals,
//! Agner Fog's instruction tables and microarchitecture guide, and published microbenchmark
//! surveys (Chips and Cheese, 7-cpu.com); each entry names those it rests on.
use crate::answer::NoModel;

/// How a core is identified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// x86: cpuid vendor, family and model (as /proc/cpuinfo prints them, decimal).
    X86(&'static str, u32, &'static [u32]),
    /// Arm: MIDR implementer and part number.
    Arm(u32, u32),
}

/// The published figures of one microarchitecture.
#[derive(Debug, Clone, PartialEq)]
pub struct Uarch {
    /// Core (and the products built on it).
    pub name: &'static str,
    /// How the core is recognised.
    pub key: Key,
    /// Load-to-use latency, cycles: L1d, L2, L3 (0: no L3 figure).
    pub latency: [f64; 3],
    /// Idle DRAM latency typical of its platforms, ns.
    pub dram_ns: f64,
    /// First-level data TLB entries (4 KiB pages) and second-level TLB entries.
    pub tlb: [u32; 2],
    /// Cycles a load pays when it misses the first-level TLB and hits the second.
    pub stlb_hit_cycles: f64,
    /// L1d misses the core keeps in flight (fill buffers, miss address buffers).
    pub fill_buffers: u32,
    /// Page walks the core runs at once (its page-miss handlers).
    pub page_walkers: u32,
    /// Bytes per cycle: 256-bit loads from L1d, 256-bit stores into L1d, L2 to L1 fills, L3 to
    /// L2 fills (per core).
    pub bytes_per_cycle: [f64; 4],
    /// Latency of a vector floating-point add, cycles (the read kernel's accumulators wait on it).
    pub fadd_cycles: f64,
    /// Micro-ops the core renames a cycle (its narrowest stage after decode): a loop of more
    /// than this many a cycle waits on the front end, not on the ports.
    pub rename_width: f64,
    /// Cycles between back-to-back `rdtsc` (reciprocal throughput; `cntvct_el0` reads on Arm).
    pub rdtsc_cycles: f64,
    /// Where the figures come from.
    pub reference: &'static str,
}

impl Uarch {
    /// Whether the first-level prefetchers run more than one line ahead of a dependent chain.
    /// Intel's fetch the next line, or the next address of a load's stride, one ahead (the
    /// optimization manual's "Data Prefetching": the DCU and IP prefetchers); a chain whose next
    /// address is the load's own result then finds that line no sooner than its own miss would,
    /// and each load waits for the L2 (on the 6/207 guest: 15 cycles a load from 64 KiB to 32
    /// MiB, where AMD's Zen 4 read 4, its L1's). AMD's and Arm's run several lines ahead.
    pub fn l1_prefetch_runs_ahead(&self) -> bool {
        !matches!(self.key, Key::X86(INTEL, ..))
    }

    /// Whether the L1d spends a cycle on each line it takes from the L2, a cycle in which it
    /// serves no load or store, and another on each dirty line it gives back. Intel's manual
    /// gives the L2 64 B a cycle at peak and about 29 sustained (Skylake client): the L1 cannot
    /// accept a line and serve the core's loads in one cycle (T. Downs, uarch-bench wiki, "How
    /// much bandwidth does the L2 have to give, anyway?"). On the 6/207 guest read, write, copy
    /// and triad from the L2 ran at 1.07, 0.74, 1.0 and 1.1x of that count; AMD's Zen 4 wrote
    /// into its L2 at its L1's store rate, so AMD's L1 takes fills beside the core's accesses.
    pub fn l1_fill_takes_a_cycle(&self) -> bool {
        matches!(self.key, Key::X86(INTEL, ..))
    }

    /// Micro-op slots an AVX instruction with a load folded in takes at rename, its address
    /// indexed (`vaddpd y, y, [x + i]`, as oslab's kernels address): Intel's cores decode it
    /// micro-fused and un-laminate it into two at rename (the optimization manual's "Micro-op
    /// Fusion": an indexed address keeps a three-operand instruction fused on none of Sandy
    /// Bridge's successors); AMD's keep it one macro-op.
    pub fn folded_load_slots(&self) -> f64 {
        match self.key {
            Key::X86(INTEL, ..) => 2.0,
            _ => 1.0,
        }
    }
}

const INTEL: &str = "GenuineIntel";
const AMD: &str = "AuthenticAMD";
const INTEL_REF: &str = "Intel 64 and IA-32 Architectures Optimization Reference Manual; Agner Fog, microarchitecture guide and instruction tables; Chips and Cheese and 7-cpu.com latency surveys";
const AMD_REF: &str = "AMD Software Optimization Guide for the family; Agner Fog, microarchitecture guide and instruction tables; Chips and Cheese latency surveys";
const ARM_REF: &str = "Arm Neoverse Software Optimization Guide and Technical Reference Manual; Chips and Cheese latency surveys";

/// Every microarchitecture oslab knows.
pub const TABLE: &[Uarch] = &[
    Uarch {
        name: "Skylake client (Skylake, Kaby, Coffee, Whiskey, Comet Lake)",
        key: Key::X86(INTEL, 6, &[78, 94, 142, 158, 165, 166]),
        latency: [4.0, 12.0, 42.0],
        dram_ns: 80.0,
        tlb: [64, 1536],
        stlb_hit_cycles: 9.0,
        fill_buffers: 12,
        page_walkers: 2,
        bytes_per_cycle: [64.0, 32.0, 64.0, 32.0],
        fadd_cycles: 4.0,
        rename_width: 4.0,
        rdtsc_cycles: 25.0,
        reference: INTEL_REF,
    },
    Uarch {
        name: "Skylake server (Skylake-SP, Cascade Lake, Cooper Lake)",
        key: Key::X86(INTEL, 6, &[85]),
        latency: [4.0, 14.0, 70.0],
        dram_ns: 90.0,
        tlb: [64, 1536],
        stlb_hit_cycles: 9.0,
        fill_buffers: 12,
        page_walkers: 2,
        bytes_per_cycle: [64.0, 32.0, 64.0, 16.0],
        fadd_cycles: 4.0,
        rename_width: 4.0,
        rdtsc_cycles: 25.0,
        reference: INTEL_REF,
    },
    Uarch {
        // Rocket Lake (167) is Cypress Cove: Sunny Cove back-ported to 14 nm, the same figures.
        name: "Sunny/Willow/Cypress Cove client (Ice Lake, Tiger Lake, Rocket Lake)",
        key: Key::X86(INTEL, 6, &[125, 126, 140, 141, 167]),
        latency: [5.0, 13.0, 45.0],
        dram_ns: 90.0,
        tlb: [64, 2048],
        stlb_hit_cycles: 9.0,
        fill_buffers: 12,
        page_walkers: 2,
        bytes_per_cycle: [64.0, 64.0, 64.0, 32.0],
        fadd_cycles: 4.0,
        rename_width: 5.0,
        rdtsc_cycles: 25.0,
        reference: INTEL_REF,
    },
    Uarch {
        name: "Sunny Cove server (Ice Lake-SP)",
        key: Key::X86(INTEL, 6, &[106, 108]),
        latency: [5.0, 14.0, 80.0],
        dram_ns: 100.0,
        tlb: [64, 2048],
        stlb_hit_cycles: 9.0,
        fill_buffers: 12,
        page_walkers: 2,
        bytes_per_cycle: [64.0, 64.0, 64.0, 16.0],
        fadd_cycles: 4.0,
        rename_width: 5.0,
        rdtsc_cycles: 25.0,
        reference: INTEL_REF,
    },
    Uarch {
        name: "Golden/Raptor Cove client (Alder Lake, Raptor Lake)",
        key: Key::X86(INTEL, 6, &[151, 154, 183, 186, 191]),
        latency: [5.0, 15.0, 65.0],
        dram_ns: 90.0,
        tlb: [96, 2048],
        stlb_hit_cycles: 9.0,
        fill_buffers: 16,
        page_walkers: 4,
        bytes_per_cycle: [96.0, 64.0, 64.0, 32.0],
        fadd_cycles: 2.0,
        rename_width: 6.0,
        rdtsc_cycles: 25.0,
        reference: INTEL_REF,
    },
    Uarch {
        name: "Golden/Raptor Cove server (Sapphire Rapids, Emerald Rapids)",
        key: Key::X86(INTEL, 6, &[143, 207]),
        latency: [5.0, 16.0, 110.0],
        dram_ns: 110.0,
        tlb: [96, 2048],
        stlb_hit_cycles: 9.0,
        fill_buffers: 16,
        page_walkers: 4,
        bytes_per_cycle: [96.0, 64.0, 64.0, 16.0],
        fadd_cycles: 2.0,
        rename_width: 6.0,
        rdtsc_cycles: 25.0,
        reference: INTEL_REF,
    },
    Uarch {
        name: "Redwood/Lion Cove client (Meteor, Arrow, Lunar Lake)",
        key: Key::X86(INTEL, 6, &[170, 172, 189, 197, 198]),
        latency: [5.0, 16.0, 75.0],
        dram_ns: 110.0,
        tlb: [96, 2048],
        stlb_hit_cycles: 9.0,
        fill_buffers: 16,
        page_walkers: 4,
        bytes_per_cycle: [96.0, 64.0, 64.0, 32.0],
        fadd_cycles: 2.0,
        rename_width: 6.0,
        rdtsc_cycles: 25.0,
        reference: INTEL_REF,
    },
    Uarch {
        name: "Redwood Cove server (Granite Rapids)",
        key: Key::X86(INTEL, 6, &[173, 174]),
        latency: [5.0, 16.0, 120.0],
        dram_ns: 120.0,
        tlb: [96, 2048],
        stlb_hit_cycles: 9.0,
        fill_buffers: 16,
        page_walkers: 4,
        bytes_per_cycle: [96.0, 64.0, 64.0, 16.0],
        fadd_cycles: 2.0,
        rename_width: 6.0,
        rdtsc_cycles: 25.0,
        reference: INTEL_REF,
    },
    Uarch {
        name: "Zen, Zen+ (Naples, Summit Ridge, Pinnacle Ridge, Raven Ridge)",
        key: Key::X86(AMD, 23, &[1, 8, 17, 24, 32]),
        latency: [4.0, 17.0, 40.0],
        dram_ns: 90.0,
        tlb: [64, 1536],
        stlb_hit_cycles: 7.0,
        fill_buffers: 22,
        page_walkers: 2,
        bytes_per_cycle: [32.0, 16.0, 32.0, 32.0],
        fadd_cycles: 3.0,
        rename_width: 6.0,
        rdtsc_cycles: 36.0,
        reference: AMD_REF,
    },
    Uarch {
        name: "Zen 2 (Rome, Matisse, Renoir, Lucienne)",
        key: Key::X86(AMD, 23, &[49, 96, 104, 113, 144, 160]),
        latency: [4.0, 12.0, 39.0],
        dram_ns: 95.0,
        tlb: [64, 2048],
        stlb_hit_cycles: 7.0,
        fill_buffers: 22,
        page_walkers: 2,
        bytes_per_cycle: [64.0, 32.0, 32.0, 32.0],
        fadd_cycles: 3.0,
        rename_width: 6.0,
        rdtsc_cycles: 36.0,
        reference: AMD_REF,
    },
    Uarch {
        name: "Zen 3 (Milan, Vermeer, Cezanne, Rembrandt)",
        key: Key::X86(AMD, 25, &[1, 8, 33, 68, 80]),
        latency: [4.0, 12.0, 46.0],
        dram_ns: 95.0,
        tlb: [64, 2048],
        stlb_hit_cycles: 7.0,
        fill_buffers: 24,
        page_walkers: 6,
        bytes_per_cycle: [64.0, 32.0, 32.0, 32.0],
        fadd_cycles: 3.0,
        rename_width: 6.0,
        rdtsc_cycles: 36.0,
        reference: AMD_REF,
    },
    Uarch {
        name: "Zen 4 (Genoa, Bergamo, Siena, Raphael, Phoenix)",
        key: Key::X86(AMD, 25, &[17, 24, 97, 116, 117, 120, 160]),
        latency: [4.0, 14.0, 50.0],
        dram_ns: 105.0,
        tlb: [72, 3072],
        stlb_hit_cycles: 7.0,
        fill_buffers: 24,
        page_walkers: 6,
        bytes_per_cycle: [64.0, 32.0, 64.0, 32.0],
        fadd_cycles: 3.0,
        rename_width: 6.0,
        rdtsc_cycles: 36.0,
        reference: AMD_REF,
    },
    Uarch {
        name: "Zen 5 (Turin, Granite Ridge, Strix Point)",
        key: Key::X86(AMD, 26, &[2, 17, 36, 68]),
        latency: [4.0, 14.0, 50.0],
        dram_ns: 105.0,
        tlb: [96, 4096],
        stlb_hit_cycles: 7.0,
        fill_buffers: 24,
        page_walkers: 6,
        bytes_per_cycle: [64.0, 64.0, 64.0, 32.0],
        fadd_cycles: 2.0,
        rename_width: 8.0,
        rdtsc_cycles: 36.0,
        reference: AMD_REF,
    },
    Uarch {
        name: "Arm Neoverse N1 (Graviton2, Ampere Altra)",
        key: Key::Arm(0x41, 0xd0c),
        latency: [4.0, 11.0, 0.0],
        dram_ns: 110.0,
        tlb: [48, 1280],
        stlb_hit_cycles: 5.0,
        fill_buffers: 20,
        page_walkers: 2,
        bytes_per_cycle: [32.0, 16.0, 32.0, 16.0],
        fadd_cycles: 2.0,
        rename_width: 4.0,
        rdtsc_cycles: 10.0,
        reference: ARM_REF,
    },
    Uarch {
        name: "Arm Neoverse V1 (Graviton3)",
        key: Key::Arm(0x41, 0xd40),
        latency: [4.0, 13.0, 0.0],
        dram_ns: 120.0,
        tlb: [48, 2048],
        stlb_hit_cycles: 5.0,
        fill_buffers: 24,
        page_walkers: 2,
        bytes_per_cycle: [64.0, 32.0, 64.0, 16.0],
        fadd_cycles: 2.0,
        rename_width: 8.0,
        rdtsc_cycles: 10.0,
        reference: ARM_REF,
    },
    Uarch {
        name: "Arm Neoverse N2 (Yitian 710, Cobalt 100)",
        key: Key::Arm(0x41, 0xd49),
        latency: [4.0, 11.0, 0.0],
        dram_ns: 110.0,
        tlb: [48, 1536],
        stlb_hit_cycles: 5.0,
        fill_buffers: 24,
        page_walkers: 2,
        bytes_per_cycle: [64.0, 32.0, 64.0, 16.0],
        fadd_cycles: 2.0,
        rename_width: 5.0,
        rdtsc_cycles: 10.0,
        reference: ARM_REF,
    },
    Uarch {
        name: "Arm Neoverse V2 (Graviton4, Grace)",
        key: Key::Arm(0x41, 0xd4f),
        latency: [4.0, 13.0, 0.0],
        dram_ns: 120.0,
        tlb: [48, 2048],
        stlb_hit_cycles: 5.0,
        fill_buffers: 24,
        page_walkers: 2,
        bytes_per_cycle: [64.0, 32.0, 64.0, 16.0],
        fadd_cycles: 2.0,
        rename_width: 8.0,
        rdtsc_cycles: 10.0,
        reference: ARM_REF,
    },
];

/// Client cores and the server core of the same generation (the same core with a mesh and
/// more memory channels: slower L3 and DRAM, narrower L3 fills).
const SERVER_OF: &[(&str, &str)] = &[
    ("Skylake client", "Skylake server"),
    ("Sunny/Willow/Cypress Cove client", "Sunny Cove server"),
    ("Golden/Raptor Cove client", "Golden/Raptor Cove server"),
    ("Redwood/Lion Cove client", "Redwood Cove server"),
];

/// The server core of `client`'s generation, when it is a client core with one. A hypervisor may
/// present a client core's model number while naming the product a server ("Intel(R) Xeon(R)
/// Processor"): the server's figures are then the nearer guess.
pub fn server_sibling(client: &Uarch) -> Option<&'static Uarch> {
    let (_, server) = SERVER_OF.iter().find(|(c, _)| client.name.starts_with(c))?;
    TABLE.iter().find(|u| u.name.starts_with(server))
}

/// The entry for a CPU, from the vendor string and the signature oslab's fingerprint records
/// ("family/model/stepping" on x86, "0xIMPL/0xPART/..." on Arm).
pub fn lookup(vendor: Option<&str>, signature: Option<&str>) -> Result<&'static Uarch, NoModel> {
    let (Some(vendor), Some(signature)) = (vendor, signature) else {
        return Err("the cpu's vendor or signature is not exposed".into());
    };
    let mut parts = signature.split('/');
    let number = |s: Option<&str>| -> Option<u32> {
        let s = s?.trim();
        match s.strip_prefix("0x") {
            Some(hex) => u32::from_str_radix(hex, 16).ok(),
            None => s.parse().ok(),
        }
    };
    let (a, b) = (number(parts.next()), number(parts.next()));
    TABLE
        .iter()
        .find(|u| match (u.key, a, b) {
            (Key::X86(v, f, models), Some(fam), Some(model)) => {
                v == vendor && f == fam && models.contains(&model)
            }
            (Key::Arm(imp, part), Some(i), Some(p)) => imp == i && part == p,
            _ => false,
        })
        .ok_or_else(|| {
            NoModel(format!(
                "{vendor} {signature} is not in oslab's table of microarchitectures"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_cores_are_found_by_signature() {
        let spr = lookup(Some("GenuineIntel"), Some("6/143/8")).unwrap();
        assert!(spr.name.contains("Sapphire Rapids"));
        let genoa = lookup(Some("AuthenticAMD"), Some("25/17/1")).unwrap();
        assert!(genoa.name.contains("Zen 4"));
        let n1 = lookup(Some("0x41"), Some("0x41/0xd0c/0x3")).unwrap();
        assert!(n1.name.contains("N1"));
        // Same family and model numbers under another vendor are another core.
        assert!(lookup(Some("AuthenticAMD"), Some("6/143/8")).is_err());
        assert!(lookup(Some("GenuineIntel"), Some("6/1/0"))
            .unwrap_err()
            .0
            .contains("not in oslab's table"));
        assert!(lookup(None, Some("6/143/8")).is_err());
    }

    #[test]
    fn client_cores_have_their_generations_server() {
        for (client, server) in SERVER_OF {
            let c = TABLE.iter().find(|u| u.name.starts_with(client)).unwrap();
            let s = server_sibling(c).unwrap();
            assert!(s.name.starts_with(server), "{}", c.name);
            assert!(
                s.latency[2] > c.latency[2] && s.dram_ns >= c.dram_ns,
                "{}",
                s.name
            );
        }
        let genoa = lookup(Some("AuthenticAMD"), Some("25/17/1")).unwrap();
        assert!(server_sibling(genoa).is_none());
    }

    #[test]
    fn every_entry_is_internally_consistent() {
        for u in TABLE {
            assert!(
                u.latency[0] > 0.0 && u.latency[1] > u.latency[0],
                "{}",
                u.name
            );
            assert!(
                u.latency[2] == 0.0 || u.latency[2] > u.latency[1],
                "{}",
                u.name
            );
            assert!(u.tlb[1] > u.tlb[0] && u.fill_buffers > 0, "{}", u.name);
            assert!((1..=8).contains(&u.page_walkers), "{}", u.name);
            assert!(u.bytes_per_cycle.iter().all(|&b| b > 0.0), "{}", u.name);
            assert!((4.0..=10.0).contains(&u.rename_width), "{}", u.name);
        }
        // No signature belongs to two entries.
        for (i, a) in TABLE.iter().enumerate() {
            for b in &TABLE[i + 1..] {
                if let (Key::X86(va, fa, ma), Key::X86(vb, fb, mb)) = (a.key, b.key) {
                    assert!(
                        va != vb || fa != fb || !ma.iter().any(|m| mb.contains(m)),
                        "{} and {}",
                        a.name,
                        b.name
                    );
                }
            }
        }
    }
}
