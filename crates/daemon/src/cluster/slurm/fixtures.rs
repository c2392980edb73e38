//! The recorded Slurm nodes the tests resolve processes on (`tests/data/slurm/`).

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// `tests/data/slurm`: `proc-*` trees (see `steps.rs`'s tests) and `records`.
pub(crate) fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/slurm")
}

/// A copy of `tests/data/slurm/records` in a fresh directory, with the plugin's modes (git
/// keeps neither owners nor directory modes): job 12 step 0 at 10 (slurmstepd 1000), job 13's
/// batch step at −5 (slurmstepd 2000), and job 14 step 0 at 50, whose slurmstepd is gone.
pub(crate) fn records() -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "baton-slurm-records-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    for e in std::fs::read_dir(data().join("records")).unwrap() {
        let e = e.unwrap();
        let to = dir.join(e.file_name());
        std::fs::copy(e.path(), &to).unwrap();
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    dir
}
