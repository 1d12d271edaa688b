//! The SMBIOS table read from the firmware's files.

use oslab_core::dmi::{memory_devices, peak, NoPeak, Peak};
use std::path::Path;

/// The machine's peak from /sys/firmware/dmi/tables/DMI, or why there is none.
pub fn read_peak() -> Result<Peak, NoPeak> {
    read_peak_from(Path::new("/sys/firmware/dmi/tables/DMI"))
}

/// As [`read_peak`], from a table file.
pub fn read_peak_from(path: &Path) -> Result<Peak, NoPeak> {
    let table = std::fs::read(path).map_err(|e| {
        NoPeak(match e.kind() {
            std::io::ErrorKind::NotFound => "no SMBIOS tables exposed by the firmware".to_string(),
            std::io::ErrorKind::PermissionDenied => {
                format!("{} is readable by root only", path.display())
            }
            _ => format!("{}: {e}", path.display()),
        })
    })?;
    peak(&memory_devices(&table))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_table_means_no_model() {
        let e = read_peak_from(Path::new("/no/such/DMI")).unwrap_err();
        assert!(e.0.contains("no SMBIOS"), "{e}");
    }
}
