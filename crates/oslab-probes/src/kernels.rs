//! Bandwidth kernels in inline assembly, so we know exactly which loads and stores run.
//!
//! A compiler turns a plain copy loop into a call to `memcpy`, which switches to non-temporal
//! stores for large sizes: STREAM's "copy" then measures a different store than its "scale".
//! Written in assembly, each kernel does what its name says: 256-bit AVX loads, and either plain
//! stores (`vmovapd`: the line is read for ownership first, "write-allocate") or non-temporal
//! stores (`vmovntpd`: written around the caches, no read). `memcpy` is offered as a kernel of
//! its own, labelled as such.
//!
//! Every kernel processes 128 bytes (four 32-byte vectors) per iteration; ranges must be
//! 32-byte aligned and a multiple of [`UNIT`] bytes.

/// Bytes per kernel iteration; ranges are multiples of this.
pub const UNIT: usize = 128;

/// What a kernel computes (STREAM's four plus plain read and write). `d` is the destination,
/// `x` and `y` the sources, `s` a scalar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// Sum of `x` (loads only).
    Read,
    /// `d = s` (stores only).
    Write,
    /// `d = x` (STREAM copy).
    Copy,
    /// `d = s * x` (STREAM scale).
    Scale,
    /// `d = x + y` (STREAM add).
    Add,
    /// `d = x + s * y` (STREAM triad).
    Triad,
    /// Reads and writes mixed in this ratio, block by block: of every `reads + writes` blocks
    /// of [`MIX_BLOCK`] bytes, the first `reads` are read from `x` and the rest written to `d`
    /// (the read:write mixes of MLC's bandwidth matrix).
    Mix {
        /// Blocks read per group.
        reads: u8,
        /// Blocks written per group.
        writes: u8,
    },
}

/// Bytes per block of a [`Kernel::Mix`]: reads and writes alternate at this grain.
pub const MIX_BLOCK: usize = 4096;

/// Which stores a kernel uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stores {
    /// Ordinary stores through the caches (write-allocate).
    Plain,
    /// Non-temporal (streaming) stores around the caches.
    NonTemporal,
    /// The C library's `memcpy` (copy only); it picks its own stores.
    Memcpy,
}

impl Stores {
    /// Name used in parameters.
    pub fn name(self) -> &'static str {
        match self {
            Stores::Plain => "plain",
            Stores::NonTemporal => "nontemporal",
            Stores::Memcpy => "libc-memcpy",
        }
    }
}

impl Kernel {
    /// The STREAM kernels.
    pub const STREAM: [Kernel; 4] = [Kernel::Copy, Kernel::Scale, Kernel::Add, Kernel::Triad];

    /// Name used in parameters.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Read => "read",
            Kernel::Write => "write",
            Kernel::Copy => "copy",
            Kernel::Scale => "scale",
            Kernel::Add => "add",
            Kernel::Triad => "triad",
            Kernel::Mix { .. } => "mix",
        }
    }

    /// The read:write ratio of a mix, e.g. "3:1" (None for the other kernels).
    pub fn ratio(self) -> Option<String> {
        match self {
            Kernel::Mix { reads, writes } => Some(format!("{reads}:{writes}")),
            _ => None,
        }
    }

    /// How many source arrays it reads.
    pub fn sources(self) -> usize {
        match self {
            Kernel::Write | Kernel::Mix { reads: 0, .. } => 0,
            Kernel::Read | Kernel::Copy | Kernel::Scale | Kernel::Mix { .. } => 1,
            Kernel::Add | Kernel::Triad => 2,
        }
    }

    /// Whether it writes a destination.
    pub fn writes(self) -> bool {
        !matches!(self, Kernel::Read | Kernel::Mix { writes: 0, .. })
    }

    /// Arrays it touches.
    pub fn arrays(self) -> usize {
        self.sources() + usize::from(self.writes())
    }

    /// Bytes per element as STREAM counts them: each array read or written once (a mix reads
    /// or writes each element of the range once).
    pub fn stream_bytes(self) -> usize {
        match self {
            Kernel::Mix { .. } => 8,
            _ => 8 * self.arrays(),
        }
    }

    /// Bytes per element the memory system really moves, when known: plain stores first read
    /// the destination line (write-allocate), so a written element costs two transfers.
    pub fn hardware_bytes(self, stores: Stores) -> Option<f64> {
        let written = match self {
            Kernel::Mix { reads, writes } => 8.0 * writes as f64 / (reads + writes).max(1) as f64,
            _ if self.writes() => 8.0,
            _ => 0.0,
        };
        match stores {
            Stores::Plain => Some(self.stream_bytes() as f64 + written),
            Stores::Memcpy => None,
            Stores::NonTemporal => Some(self.stream_bytes() as f64),
        }
    }

    /// The store kinds this kernel can run with here.
    pub fn store_kinds(self) -> &'static [Stores] {
        match self {
            Kernel::Read => &[Stores::Plain],
            Kernel::Copy => &[Stores::Plain, Stores::NonTemporal, Stores::Memcpy],
            _ => &[Stores::Plain, Stores::NonTemporal],
        }
    }
}

/// Whether the assembly kernels can run on this CPU.
pub fn available() -> Result<(), oslab_core::reason::Unavailable> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx") {
            return Ok(());
        }
        Err("the bandwidth kernels need AVX; this CPU has none".into())
    }
    #[cfg(not(target_arch = "x86_64"))]
    Err("the bandwidth kernels are written for x86-64 (AVX) only".into())
}

/// Runs `kernel` once over `bytes` bytes of each array.
///
/// # Safety
/// [`available`] must have returned Ok; `d`, `x`, `y` must each be valid for `bytes` bytes (those
/// the kernel uses), 32-byte aligned, and `bytes` a non-zero multiple of [`UNIT`]. `memcpy`
/// requires `d` and `x` not to overlap.
pub unsafe fn run(
    kernel: Kernel,
    stores: Stores,
    d: *mut f64,
    x: *const f64,
    y: *const f64,
    bytes: usize,
) {
    debug_assert!(bytes > 0 && bytes.is_multiple_of(UNIT));
    #[cfg(target_arch = "x86_64")]
    // SAFETY: forwarded contract.
    unsafe {
        let s = 3.0f64;
        match (kernel, stores) {
            (Kernel::Read, _) => avx::read(x, bytes),
            (Kernel::Mix { reads, writes }, _) => {
                let (r, w) = (reads as usize * MIX_BLOCK, writes as usize * MIX_BLOCK);
                let mut at = 0;
                while at < bytes {
                    let read = r.min(bytes - at);
                    if read > 0 {
                        avx::read(x.byte_add(at), read);
                    }
                    at += read;
                    let write = w.min(bytes - at);
                    if write > 0 {
                        let d = d.byte_add(at);
                        match stores {
                            Stores::NonTemporal => avx::nt::run(Kernel::Write, d, x, y, write, &s),
                            _ => avx::plain::run(Kernel::Write, d, x, y, write, &s),
                        }
                    }
                    at += write;
                    if r + w == 0 {
                        break;
                    }
                }
            }
            (Kernel::Copy, Stores::Memcpy) => {
                libc::memcpy(d as *mut libc::c_void, x as *const libc::c_void, bytes);
            }
            (k, Stores::NonTemporal) => avx::nt::run(k, d, x, y, bytes, &s),
            (k, _) => avx::plain::run(k, d, x, y, bytes, &s),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (kernel, stores, d, x, y, bytes);
}

#[cfg(target_arch = "x86_64")]
mod avx {
    use super::Kernel;
    use std::arch::asm;

    /// Sums `bytes` of `x` into four accumulators (loads only).
    #[target_feature(enable = "avx")]
    pub unsafe fn read(x: *const f64, bytes: usize) {
        // SAFETY: the caller guarantees x is valid, aligned, and bytes a multiple of 128.
        unsafe {
            asm!(
                "vxorpd {a0}, {a0}, {a0}",
                "vxorpd {a1}, {a1}, {a1}",
                "vxorpd {a2}, {a2}, {a2}",
                "vxorpd {a3}, {a3}, {a3}",
                "2:",
                "vaddpd {a0}, {a0}, [{x} + {i}]",
                "vaddpd {a1}, {a1}, [{x} + {i} + 32]",
                "vaddpd {a2}, {a2}, [{x} + {i} + 64]",
                "vaddpd {a3}, {a3}, [{x} + {i} + 96]",
                "add {i}, 128",
                "cmp {i}, {n}",
                "jb 2b",
                x = in(reg) x, n = in(reg) bytes, i = inout(reg) 0usize => _,
                a0 = out(ymm_reg) _, a1 = out(ymm_reg) _, a2 = out(ymm_reg) _, a3 = out(ymm_reg) _,
                options(nostack, readonly),
            );
        }
    }

    /// The end of every writing loop body: four 32-byte stores of t0..t3 to d with the given
    /// store instruction, the loop step, and the fence after the loop.
    macro_rules! store4_and_loop {
        ($st:literal, $fence:literal) => {
            concat!(
                $st,
                " [{d} + {i}], {t0}\n",
                $st,
                " [{d} + {i} + 32], {t1}\n",
                $st,
                " [{d} + {i} + 64], {t2}\n",
                $st,
                " [{d} + {i} + 96], {t3}\n",
                "add {i}, 128\n",
                "cmp {i}, {n}\n",
                "jb 2b\n",
                $fence
            )
        };
    }

    /// The writing kernels, generated once per store instruction.
    macro_rules! writing_kernels {
        ($module:ident, $st:literal, $fence:literal) => {
            pub mod $module {
                use super::Kernel;
                use std::arch::asm;

                /// Runs a writing kernel with this module's stores.
                #[target_feature(enable = "avx")]
                pub unsafe fn run(
                    k: Kernel,
                    d: *mut f64,
                    x: *const f64,
                    y: *const f64,
                    n: usize,
                    s: &f64,
                ) {
                    // SAFETY: the caller guarantees valid, aligned ranges of n bytes.
                    unsafe {
                        match k {
                            Kernel::Write => asm!(
                                "vbroadcastsd {v}, qword ptr [{s}]",
                                "2:",
                                concat!($st, " [{d} + {i}], {v}"),
                                concat!($st, " [{d} + {i} + 32], {v}"),
                                concat!($st, " [{d} + {i} + 64], {v}"),
                                concat!($st, " [{d} + {i} + 96], {v}"),
                                "add {i}, 128",
                                "cmp {i}, {n}",
                                "jb 2b",
                                $fence,
                                d = in(reg) d, s = in(reg) s, n = in(reg) n,
                                i = inout(reg) 0usize => _, v = out(ymm_reg) _,
                                options(nostack),
                            ),
                            Kernel::Copy => asm!(
                                "2:",
                                "vmovapd {t0}, [{x} + {i}]",
                                "vmovapd {t1}, [{x} + {i} + 32]",
                                "vmovapd {t2}, [{x} + {i} + 64]",
                                "vmovapd {t3}, [{x} + {i} + 96]",
                                store4_and_loop!($st, $fence),
                                d = in(reg) d, x = in(reg) x, n = in(reg) n,
                                i = inout(reg) 0usize => _,
                                t0 = out(ymm_reg) _, t1 = out(ymm_reg) _,
                                t2 = out(ymm_reg) _, t3 = out(ymm_reg) _,
                                options(nostack),
                            ),
                            Kernel::Scale => asm!(
                                "vbroadcastsd {v}, qword ptr [{s}]",
                                "2:",
                                "vmulpd {t0}, {v}, [{x} + {i}]",
                                "vmulpd {t1}, {v}, [{x} + {i} + 32]",
                                "vmulpd {t2}, {v}, [{x} + {i} + 64]",
                                "vmulpd {t3}, {v}, [{x} + {i} + 96]",
                                store4_and_loop!($st, $fence),
                                d = in(reg) d, x = in(reg) x, s = in(reg) s, n = in(reg) n,
                                i = inout(reg) 0usize => _, v = out(ymm_reg) _,
                                t0 = out(ymm_reg) _, t1 = out(ymm_reg) _,
                                t2 = out(ymm_reg) _, t3 = out(ymm_reg) _,
                                options(nostack),
                            ),
                            Kernel::Add => asm!(
                                "2:",
                                "vmovapd {t0}, [{x} + {i}]",
                                "vmovapd {t1}, [{x} + {i} + 32]",
                                "vmovapd {t2}, [{x} + {i} + 64]",
                                "vmovapd {t3}, [{x} + {i} + 96]",
                                "vaddpd {t0}, {t0}, [{y} + {i}]",
                                "vaddpd {t1}, {t1}, [{y} + {i} + 32]",
                                "vaddpd {t2}, {t2}, [{y} + {i} + 64]",
                                "vaddpd {t3}, {t3}, [{y} + {i} + 96]",
                                store4_and_loop!($st, $fence),
                                d = in(reg) d, x = in(reg) x, y = in(reg) y, n = in(reg) n,
                                i = inout(reg) 0usize => _,
                                t0 = out(ymm_reg) _, t1 = out(ymm_reg) _,
                                t2 = out(ymm_reg) _, t3 = out(ymm_reg) _,
                                options(nostack),
                            ),
                            Kernel::Triad => asm!(
                                "vbroadcastsd {v}, qword ptr [{s}]",
                                "2:",
                                "vmulpd {t0}, {v}, [{y} + {i}]",
                                "vmulpd {t1}, {v}, [{y} + {i} + 32]",
                                "vmulpd {t2}, {v}, [{y} + {i} + 64]",
                                "vmulpd {t3}, {v}, [{y} + {i} + 96]",
                                "vaddpd {t0}, {t0}, [{x} + {i}]",
                                "vaddpd {t1}, {t1}, [{x} + {i} + 32]",
                                "vaddpd {t2}, {t2}, [{x} + {i} + 64]",
                                "vaddpd {t3}, {t3}, [{x} + {i} + 96]",
                                store4_and_loop!($st, $fence),
                                d = in(reg) d, x = in(reg) x, y = in(reg) y, s = in(reg) s,
                                n = in(reg) n, i = inout(reg) 0usize => _, v = out(ymm_reg) _,
                                t0 = out(ymm_reg) _, t1 = out(ymm_reg) _,
                                t2 = out(ymm_reg) _, t3 = out(ymm_reg) _,
                                options(nostack),
                            ),
                            Kernel::Read | Kernel::Mix { .. } => super::read(x, n),
                        }
                    }
                }
            }
        };
    }

    writing_kernels!(plain, "vmovapd", "");
    // Streaming stores are weakly ordered: fence so the next timed step sees them done.
    writing_kernels!(nt, "vmovntpd", "sfence");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrays(n: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        // Vec<f64> is only 8-byte aligned: over-allocate and let the test slice an aligned part.
        (
            vec![0.0; n + 4],
            (0..n + 4).map(|i| i as f64).collect(),
            vec![2.0; n + 4],
        )
    }

    fn aligned(v: &mut [f64]) -> *mut f64 {
        let off = v.as_ptr().align_offset(32);
        v[off..].as_mut_ptr()
    }

    #[test]
    #[ignore = "needs AVX (x86-64 with AVX; CI runs it)"]
    fn kernels_compute_what_they_say_with_every_store_kind() {
        available().expect("the kernels need AVX");
        let n = 64; // 512 bytes
        for kernel in [
            Kernel::Write,
            Kernel::Copy,
            Kernel::Scale,
            Kernel::Add,
            Kernel::Triad,
        ] {
            for &stores in kernel.store_kinds() {
                let (mut d, mut x, mut y) = arrays(n);
                let (dp, xp, yp) = (aligned(&mut d), aligned(&mut x), aligned(&mut y));
                // SAFETY: AVX checked; each pointer has n aligned elements behind it.
                unsafe { run(kernel, stores, dp, xp, yp, n * 8) };
                for i in 0..n {
                    // SAFETY: within the aligned n elements.
                    let (dv, xv, yv) = unsafe { (*dp.add(i), *xp.add(i), *yp.add(i)) };
                    let want = match kernel {
                        Kernel::Write => 3.0,
                        Kernel::Copy => xv,
                        Kernel::Scale => 3.0 * xv,
                        Kernel::Add => xv + yv,
                        Kernel::Triad => xv + 3.0 * yv,
                        Kernel::Read | Kernel::Mix { .. } => unreachable!(),
                    };
                    assert_eq!(dv, want, "{kernel:?} {stores:?} element {i}");
                }
            }
        }
    }

    #[test]
    #[ignore = "needs AVX (x86-64 with AVX; CI runs it)"]
    fn a_mix_writes_only_its_share_of_the_blocks() {
        available().expect("the kernels need AVX");
        let per_block = MIX_BLOCK / 8;
        let n = 8 * per_block; // two groups of 1 read + 3 written blocks
        for stores in [Stores::Plain, Stores::NonTemporal] {
            let (mut d, mut x, mut y) = arrays(n);
            let (dp, xp, yp) = (aligned(&mut d), aligned(&mut x), aligned(&mut y));
            let mix = Kernel::Mix {
                reads: 1,
                writes: 3,
            };
            // SAFETY: AVX checked; each pointer has n aligned elements behind it.
            unsafe { run(mix, stores, dp, xp, yp, n * 8) };
            for i in 0..n {
                // SAFETY: within the aligned n elements.
                let dv = unsafe { *dp.add(i) };
                let written = !(i / per_block).is_multiple_of(4);
                assert_eq!(
                    dv,
                    if written { 3.0 } else { 0.0 },
                    "{stores:?} element {i}"
                );
            }
        }
    }

    #[test]
    fn stream_counts_each_array_once_and_write_allocate_adds_one() {
        assert_eq!(Kernel::Triad.stream_bytes(), 24);
        assert_eq!(Kernel::Triad.hardware_bytes(Stores::Plain), Some(32.0));
        assert_eq!(
            Kernel::Triad.hardware_bytes(Stores::NonTemporal),
            Some(24.0)
        );
        assert_eq!(Kernel::Copy.hardware_bytes(Stores::Memcpy), None);
        assert_eq!(Kernel::Read.hardware_bytes(Stores::Plain), Some(8.0));
        // 3:1 with plain stores: every element once, a quarter of them written (and read first).
        let mix = Kernel::Mix {
            reads: 3,
            writes: 1,
        };
        assert_eq!(mix.hardware_bytes(Stores::Plain), Some(10.0));
        assert_eq!(mix.hardware_bytes(Stores::NonTemporal), Some(8.0));
        assert_eq!(mix.ratio().as_deref(), Some("3:1"));
        assert_eq!(Kernel::Write.stream_bytes(), 8);
    }
}
