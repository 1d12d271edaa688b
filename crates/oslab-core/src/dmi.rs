//! Theoretical peak memory bandwidth from the firmware's SMBIOS tables (type 17, Memory Device):
//! channels x transfer rate x bus width, the textbook peak, parsed from the table's bytes.
//! `oslab-os`'s `dmi` reads them from /sys/firmware/dmi/tables/DMI (root only); a VM often has
//! none or reports no speed, and then there is no model, with the reason.

/// One populated memory device (DIMM).
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryDevice {
    /// Slot name, e.g. "CPU1_DIMM_A1".
    pub locator: String,
    /// Size in MiB.
    pub size_mib: u64,
    /// Configured speed in MT/s (or the rated speed when no configured speed is given).
    pub mts: u32,
    /// Data width in bits (64 for a DDR4 DIMM, 2 x 32 for DDR5).
    pub data_width: u16,
}

/// The peak and how it was derived.
#[derive(Debug, Clone, PartialEq)]
pub struct Peak {
    /// GB/s (1e9 bytes per second).
    pub gbps: f64,
    /// Channels assumed (populated slots grouped by locator without its trailing slot number).
    pub channels: usize,
    /// Transfer rate used (the slowest device's), MT/s.
    pub mts: u32,
    /// Bus width per channel in bits.
    pub width_bits: u16,
    /// Populated devices.
    pub devices: usize,
}

impl Peak {
    /// The model in words.
    pub fn model(&self) -> String {
        format!(
            "{} channels x {} MT/s x {} bits / 8 (SMBIOS: {} DIMMs; channels from slot names)",
            self.channels, self.mts, self.width_bits, self.devices
        )
    }
}

fn word(s: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*s.get(off)?, *s.get(off + 1)?]))
}

fn dword(s: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(s.get(off..off + 4)?.try_into().ok()?))
}

/// The populated type-17 devices in a raw SMBIOS structure table.
pub fn memory_devices(table: &[u8]) -> Vec<MemoryDevice> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 4 <= table.len() {
        let kind = table[at];
        let len = table[at + 1] as usize;
        if len < 4 || at + len > table.len() {
            break;
        }
        let formatted = &table[at..at + len];
        // Strings follow the formatted area, each NUL-terminated, the set ending in a double NUL.
        let mut end = at + len;
        while end + 1 < table.len() && !(table[end] == 0 && table[end + 1] == 0) {
            end += 1;
        }
        let strings: Vec<String> = table[at + len..end]
            .split(|&b| b == 0)
            .map(|s| String::from_utf8_lossy(s).trim().to_string())
            .collect();
        if kind == 17 {
            if let Some(d) = device(formatted, &strings) {
                out.push(d);
            }
        }
        if kind == 127 {
            break; // end of table
        }
        at = end + 2;
    }
    out
}

fn device(s: &[u8], strings: &[String]) -> Option<MemoryDevice> {
    let size_mib = match word(s, 0x0C)? {
        0 | 0xFFFF => return None, // empty slot / unknown
        0x7FFF => u64::from(dword(s, 0x1C)? & 0x7FFF_FFFF),
        v if v & 0x8000 != 0 => u64::from(v & 0x7FFF) / 1024, // KiB granularity
        v => u64::from(v),
    };
    let rated = word(s, 0x15).unwrap_or(0);
    let configured = word(s, 0x20).unwrap_or(0);
    let pick = |v: u16, ext: usize| match v {
        0xFFFF => dword(s, ext).unwrap_or(0),
        v => u32::from(v),
    };
    let mts = match pick(configured, 0x58) {
        0 => pick(rated, 0x54),
        v => v,
    };
    let locator = s
        .get(0x10)
        .and_then(|&i| strings.get((i as usize).checked_sub(1)?))
        .cloned()
        .unwrap_or_default();
    Some(MemoryDevice {
        locator,
        size_mib,
        mts,
        data_width: word(s, 0x0A).unwrap_or(0),
    })
}

crate::reason! {
    /// Why a machine's memory peak is not known from its SMBIOS table.
    NoPeak
}

/// The peak of these devices, or why there is none.
pub fn peak(devices: &[MemoryDevice]) -> Result<Peak, NoPeak> {
    if devices.is_empty() {
        return Err(NoPeak("SMBIOS lists no populated memory device".into()));
    }
    let mts = devices.iter().map(|d| d.mts).min().unwrap_or(0);
    if mts == 0 {
        return Err(NoPeak(
            "SMBIOS gives no memory speed (virtual machine?)".into(),
        ));
    }
    let width = devices.iter().map(|d| d.data_width).min().unwrap_or(0);
    if width == 0 || width == 0xFFFF {
        return Err(NoPeak("SMBIOS gives no memory data width".into()));
    }
    let mut channels: Vec<&str> = devices
        .iter()
        .map(|d| d.locator.trim_end_matches(|c: char| c.is_ascii_digit()))
        .collect();
    channels.sort_unstable();
    channels.dedup();
    let channels = channels.len().max(1);
    Ok(Peak {
        gbps: channels as f64 * f64::from(mts) * 1e6 * f64::from(width) / 8.0 / 1e9,
        channels,
        mts,
        width_bits: width,
        devices: devices.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A type-17 structure (SMBIOS 3.3 layout, 0x5C bytes) with its strings.
    fn dimm(locator: &str, size_mib: u16, mts: u16, width: u16) -> Vec<u8> {
        let mut s = vec![0u8; 0x5C];
        s[0] = 17;
        s[1] = 0x5C;
        s[0x0A..0x0C].copy_from_slice(&width.to_le_bytes());
        s[0x0C..0x0E].copy_from_slice(&size_mib.to_le_bytes());
        s[0x10] = 1; // first string
        s[0x15..0x17].copy_from_slice(&mts.to_le_bytes());
        s[0x20..0x22].copy_from_slice(&mts.to_le_bytes());
        s.extend_from_slice(locator.as_bytes());
        s.extend_from_slice(&[0, 0]);
        s
    }

    fn table(parts: &[Vec<u8>]) -> Vec<u8> {
        let mut t: Vec<u8> = parts.concat();
        t.extend_from_slice(&[127, 4, 0, 0, 0, 0]);
        t
    }

    #[test]
    fn channels_times_rate_times_width() {
        // Four DIMMs on channels A and B (two per channel), one empty slot, DDR4-3200.
        let t = table(&[
            dimm("DIMM_A1", 16384, 3200, 64),
            dimm("DIMM_A2", 16384, 3200, 64),
            dimm("DIMM_B1", 16384, 3200, 64),
            dimm("DIMM_B2", 16384, 3200, 64),
            dimm("DIMM_C1", 0, 0, 64),
        ]);
        let devices = memory_devices(&t);
        assert_eq!(devices.len(), 4);
        assert_eq!(devices[0].locator, "DIMM_A1");
        let p = peak(&devices).unwrap();
        assert_eq!((p.channels, p.mts, p.width_bits), (2, 3200, 64));
        assert!((p.gbps - 51.2).abs() < 1e-9, "{}", p.gbps);
        assert!(p.model().contains("2 channels x 3200 MT/s"));
    }

    #[test]
    fn no_speed_or_no_table_means_no_model() {
        let t = table(&[dimm("DIMM 0", 8192, 0, 64)]);
        assert!(peak(&memory_devices(&t))
            .unwrap_err()
            .0
            .contains("no memory speed"));
        assert!(peak(&[]).is_err());
        // Truncated tables end the walk instead of reading past the end.
        assert!(memory_devices(&t[..30]).is_empty());
    }
}
