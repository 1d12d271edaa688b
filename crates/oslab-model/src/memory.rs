//! The memory's specification: the textbook peak bandwidth, channels x transfer rate x bus width.
//! From the firmware's SMBIOS memory devices when exposed, else from the user's description
//! (`--memory DDR5-4800x12`), else there is none and the models that need it say how to supply it.

use crate::answer::NoModel;
use oslab_core::dmi;
use oslab_core::reason::BadValue;

/// What the memory is, and where that was learned.
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySpec {
    /// Transfer rate, MT/s.
    pub mts: u32,
    /// Channels.
    pub channels: u32,
    /// Bus width per channel, bits.
    pub width_bits: u32,
    /// Where the figures come from.
    pub source: String,
}

impl MemorySpec {
    /// Peak bandwidth in GB/s (1e9 bytes per second).
    pub fn peak_gbps(&self) -> f64 {
        self.mts as f64 * 1e6 * self.channels as f64 * self.width_bits as f64 / 8.0 / 1e9
    }

    /// The spec in words, e.g. "12 channels x 4800 MT/s x 64 bits".
    pub fn describe(&self) -> String {
        format!(
            "{} channels x {} MT/s x {} bits",
            self.channels, self.mts, self.width_bits
        )
    }

    /// Parses a description such as `DDR5-4800x12` (type, transfer rate, channels). DDR3/4/5
    /// channels are 64 bits wide, LPDDR4/5 channels 16 bits.
    pub fn parse(text: &str) -> Result<MemorySpec, BadValue> {
        let bad = || {
            BadValue(format!(
                "--memory {text:?}: expected TYPE-RATExCHANNELS, e.g. DDR5-4800x12 or DDR4-3200x2"
            ))
        };
        let (kind, rest) = text.trim().split_once('-').ok_or_else(bad)?;
        let (rate, channels) = rest.split_once(['x', 'X']).ok_or_else(bad)?;
        let mts: u32 = rate.parse().map_err(|_| bad())?;
        let channels: u32 = channels.parse().map_err(|_| bad())?;
        let width_bits = match kind.to_ascii_uppercase().as_str() {
            "DDR3" | "DDR4" | "DDR5" => 64,
            "LPDDR4" | "LPDDR4X" | "LPDDR5" | "LPDDR5X" => 16,
            other => {
                return Err(BadValue(format!(
                    "--memory {text:?}: unknown memory type {other:?} (DDR3, DDR4, DDR5, LPDDR4(X), LPDDR5(X))"
                )))
            }
        };
        if !(100..=20_000).contains(&mts) || !(1..=64).contains(&channels) {
            return Err(BadValue(format!(
                "--memory {text:?}: {mts} MT/s x {channels} channels is not a memory system"
            )));
        }
        Ok(MemorySpec {
            mts,
            channels,
            width_bits,
            source: format!("--memory {text}"),
        })
    }

    /// The memory as the user described it, else as the SMBIOS table did (`smbios`: its memory
    /// devices' peak, or why there is none), else why neither.
    pub fn described(
        user: Option<&str>,
        smbios: Result<dmi::Peak, dmi::NoPeak>,
    ) -> Result<MemorySpec, NoModel> {
        if let Some(text) = user {
            return MemorySpec::parse(text).map_err(|BadValue(why)| NoModel(why));
        }
        match smbios {
            Ok(p) => Ok(MemorySpec {
                mts: p.mts,
                channels: p.channels as u32,
                width_bits: p.width_bits as u32,
                source: format!("SMBIOS memory devices: {}", p.model()),
            }),
            Err(why) => Err(NoModel(format!(
                "memory speed unknown ({why}): describe it with oslab run --memory TYPE-RATExCHANNELS (or OSLAB_MEMORY), e.g. --memory DDR5-4800x12"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn textbook_peaks() {
        // DDR4-3200 x 2 channels x 8 B = 51.2 GB/s.
        let m = MemorySpec::parse("DDR4-3200x2").unwrap();
        assert!((m.peak_gbps() - 51.2).abs() < 1e-9);
        // DDR5-4800 x 12 channels x 8 B = 460.8 GB/s (a Genoa or Sapphire Rapids socket).
        assert!((MemorySpec::parse("ddr5-4800x12").unwrap().peak_gbps() - 460.8).abs() < 1e-9);
        // LPDDR5-6400 x 8 channels x 2 B = 102.4 GB/s.
        assert!((MemorySpec::parse("LPDDR5-6400x8").unwrap().peak_gbps() - 102.4).abs() < 1e-9);
    }

    #[test]
    fn malformed_descriptions_are_refused_with_the_expected_form() {
        for bad in [
            "DDR5",
            "DDR5-4800",
            "DDR5-fastx2",
            "SDR-100x1",
            "DDR4-3200x0",
            "DDR4-9x2",
        ] {
            let e = MemorySpec::parse(bad).unwrap_err();
            assert!(e.0.contains("--memory"), "{bad}: {e}");
        }
    }
}
