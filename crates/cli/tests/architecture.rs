//! ARCHITECTURE.md's code map must name every workspace member, and nothing else; the page
//! stays a map, short enough to read in one sitting; and the crate graph keeps to `ALLOWED`.

use std::collections::BTreeSet;

/// The most words ARCHITECTURE.md may have, counted as `wc -w` counts them.
const ARCHITECTURE_WORDS: usize = 4_500;

#[test]
fn architecture_stays_a_map_within_its_word_limit() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let arch = std::fs::read_to_string(format!("{root}/ARCHITECTURE.md")).unwrap();
    let words = arch.split_whitespace().count();
    assert!(
        words <= ARCHITECTURE_WORDS,
        "ARCHITECTURE.md has {words} words: keep it to {ARCHITECTURE_WORDS}, a map of the crates, \
         the data flow, the invariants and where to change what, with each design reason in a \
         sentence or two; measured figures, with their commits and raw results, belong in \
         docs/BENCHMARKS.md and the pages it links"
    );
}

#[test]
fn code_map_matches_workspace_members() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let manifest = std::fs::read_to_string(format!("{root}/Cargo.toml")).unwrap();
    let start = manifest.find("members = [").expect("workspace members");
    let end = manifest[start..].find(']').unwrap() + start;
    let members: BTreeSet<String> = manifest[start..end]
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    let arch = std::fs::read_to_string(format!("{root}/ARCHITECTURE.md")).unwrap();
    let mapped: BTreeSet<String> = arch
        .lines()
        .filter_map(|l| l.strip_prefix("### `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect();
    assert_eq!(
        members, mapped,
        "ARCHITECTURE.md's code map (### `crates/...` headings) differs from the workspace members"
    );
}

/// The crate graph, written once: for each workspace crate, the workspace crates it may depend
/// on (as a dependency, a build dependency or a test-only dependency). Everything else is a
/// layering violation: `core` and `policies` know nothing above them, the daemon shares the
/// scheduler with the processes but not their client, the interposer reaches the rest only
/// through the agent and the CUDA backend.
const ALLOWED: &[(&str, &[&str])] = &[
    ("baton-core", &[]),
    ("baton-policies", &["baton-core"]),
    ("baton-sim", &["baton-core"]),
    ("baton-protocol", &["baton-core"]),
    ("baton-cuda-sys", &[]),
    ("baton-cuda", &["baton-core", "baton-cuda-sys"]),
    ("baton-scheduler", &["baton-core", "baton-policies"]),
    (
        "baton-agent",
        &[
            "baton-core",
            "baton-policies",
            "baton-protocol",
            "baton-scheduler",
        ],
    ),
    (
        "baton-capi",
        &["baton-core", "baton-policies", "baton-protocol"],
    ),
    ("baton-libbaton", &["baton-capi"]),
    (
        "baton-interposer",
        &["baton-agent", "baton-capi", "baton-cuda"],
    ),
    (
        "baton-daemon",
        &[
            "baton-core",
            "baton-policies",
            "baton-protocol",
            "baton-scheduler",
        ],
    ),
    (
        "baton-demo",
        &[
            "baton-core",
            "baton-cuda",
            "baton-policies",
            "baton-scheduler",
            "baton-sim",
        ],
    ),
    (
        "baton-lab",
        &[
            "baton-core",
            "baton-demo",
            "baton-policies",
            "baton-protocol",
            "baton-scheduler",
            "baton-agent",
            "baton-sim",
            "baton-daemon",
        ],
    ),
    (
        "baton-cli",
        &[
            "baton-core",
            "baton-policies",
            "baton-protocol",
            "baton-agent",
            "baton-cuda",
            "baton-daemon",
            "baton-demo",
            "baton-sim",
        ],
    ),
    // The test doubles take their locks the project's way, and nothing else from above.
    ("baton-fake-cuda", &["baton-core", "baton-cuda-sys"]),
    // Its soak and chaos tests speak the daemon's protocol (a dev-dependency).
    (
        "baton-cuda-testapps",
        &["baton-core", "baton-cuda-sys", "baton-protocol"],
    ),
    ("baton-webhook", &[]),
];

#[test]
fn crates_depend_only_on_the_crates_below_them() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .expect("run cargo metadata");
    assert!(out.status.success(), "cargo metadata failed");
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let mut violations = Vec::new();
    let mut seen = BTreeSet::new();
    for package in meta["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().expect("a name");
        seen.insert(name.to_string());
        let Some((_, allowed)) = ALLOWED.iter().find(|(n, _)| *n == name) else {
            violations.push(format!(
                "{name} is not in ALLOWED: say what it may depend on"
            ));
            continue;
        };
        for dep in package["dependencies"].as_array().expect("dependencies") {
            let dep = dep["name"].as_str().expect("a dependency name");
            if dep.starts_with("baton-") && dep != name && !allowed.contains(&dep) {
                violations.push(format!("{name} depends on {dep}"));
            }
        }
    }
    for (name, _) in ALLOWED {
        assert!(
            seen.contains(*name),
            "ALLOWED names {name}, which is no workspace crate"
        );
    }
    assert!(
        violations.is_empty(),
        "crate edges not allowed: {violations:?}"
    );
}
