//! The machine's GPUs and the ones this process sees.
//!
//! `FAKE_CUDA_DEVICES=N` (1..=16, default 1) gives the machine N physical devices, alike but
//! for their number: device `p` is named `Baton Fake CUDA Device p (H100-like)` and has the
//! UUID `GPU-ppba704e-0000-4000-8000-0000000000pp` (`pp` its number in hexadecimal), so UUIDs
//! differ in their first characters as real ones do.
//!
//! `CUDA_VISIBLE_DEVICES` selects and renumbers them as the real driver does inside libcuda:
//! a comma-separated list of physical indices or UUIDs (`GPU-…`, a unique prefix is enough);
//! the process's ordinal `i` is the list's `i`-th entry. The list ends at its first entry that
//! names no device, or one already listed; an empty list hides every device (`cuInit` then
//! answers `CUDA_ERROR_NO_DEVICE`). Unset, every device is visible in its own order.

/// How many physical devices the machine may have.
pub(crate) const MAX_DEVICES: u32 = 16;

/// One physical device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Physical {
    /// Its number on the machine.
    pub index: u32,
}

impl Physical {
    /// Its 16-byte UUID.
    pub fn uuid(self) -> [u8; 16] {
        // Below MAX_DEVICES, so one byte.
        let i = u8::try_from(self.index).unwrap_or(u8::MAX);
        [
            i, 0xba, 0x70, 0x4e, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, i,
        ]
    }

    /// Its UUID as `nvidia-smi -L` prints it.
    pub fn uuid_text(self) -> String {
        baton_cuda_sys::CUuuid::from_bytes(self.uuid()).to_string()
    }

    /// Its name.
    pub fn name(self) -> String {
        format!("Baton Fake CUDA Device {} (H100-like)", self.index)
    }
}

/// The devices this process sees, by ordinal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Devices {
    visible: Vec<Physical>,
}

impl Devices {
    /// From the environment (`FAKE_CUDA_DEVICES`, `CUDA_VISIBLE_DEVICES`).
    pub fn from_env() -> Devices {
        let count = std::env::var("FAKE_CUDA_DEVICES")
            .ok()
            .and_then(|n| n.trim().parse::<u32>().ok())
            .map_or(1, |n| n.clamp(1, MAX_DEVICES));
        Devices::new(count, std::env::var("CUDA_VISIBLE_DEVICES").ok().as_deref())
    }

    /// `count` physical devices seen through `visible` (`CUDA_VISIBLE_DEVICES`'s value).
    pub fn new(count: u32, visible: Option<&str>) -> Devices {
        let all: Vec<Physical> = (0..count).map(|index| Physical { index }).collect();
        let Some(list) = visible else {
            return Devices { visible: all };
        };
        let mut seen: Vec<Physical> = Vec::new();
        for entry in list.split(',').map(str::trim) {
            let found = if entry.starts_with("GPU-") {
                let mut m = all.iter().filter(|p| p.uuid_text().starts_with(entry));
                match (m.next(), m.next()) {
                    (Some(p), None) => Some(*p),
                    _ => None,
                }
            } else {
                entry
                    .parse::<u32>()
                    .ok()
                    .and_then(|i| all.get(usize::try_from(i).ok()?).copied())
            };
            match found {
                Some(p) if !seen.contains(&p) => seen.push(p),
                _ => break,
            }
        }
        Devices { visible: seen }
    }

    /// How many devices the process sees.
    pub fn count(&self) -> usize {
        self.visible.len()
    }

    /// The physical device behind ordinal `ordinal`.
    pub fn get(&self, ordinal: i32) -> Option<Physical> {
        usize::try_from(ordinal)
            .ok()
            .and_then(|i| self.visible.get(i).copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn indices(d: &Devices) -> Vec<u32> {
        d.visible.iter().map(|p| p.index).collect()
    }

    #[test]
    fn visible_devices_are_renumbered_by_index_or_uuid() {
        assert_eq!(indices(&Devices::new(4, None)), [0, 1, 2, 3]);
        assert_eq!(indices(&Devices::new(4, Some("2,0"))), [2, 0]);
        let uuid3 = Physical { index: 3 }.uuid_text();
        assert_eq!(uuid3, "GPU-03ba704e-0000-4000-8000-000000000003");
        assert_eq!(
            indices(&Devices::new(4, Some(&format!("{uuid3},1")))),
            [3, 1]
        );
        // A unique prefix names a device; an ambiguous one ends the list.
        assert_eq!(indices(&Devices::new(4, Some("GPU-01,2"))), [1, 2]);
        assert_eq!(
            indices(&Devices::new(4, Some("GPU-0,2"))),
            Vec::<u32>::new()
        );
        // The list ends at an unknown or repeated entry.
        assert_eq!(indices(&Devices::new(2, Some("1,7,0"))), [1]);
        assert_eq!(indices(&Devices::new(4, Some("1,1,0"))), [1]);
        assert_eq!(Devices::new(4, Some("")).count(), 0);
        let d = Devices::new(4, Some("3"));
        assert_eq!(d.get(0), Some(Physical { index: 3 }));
        assert_eq!(d.get(1), None);
        assert_eq!(d.get(-1), None);
    }
}
