//! One module per subcommand.

pub mod config;
pub mod daemon;
pub mod demo;
pub mod doctor;
mod exit;
pub mod hint;
pub mod list;
pub mod policy;
pub mod priority;
pub mod run;
pub mod top;
pub mod trace;

pub use exit::Exit;

/// `--level`'s value: 1, 2 or 3 (or L1, L2, L3); the parser's error names the option and the
/// value, so the reason alone follows.
pub fn parse_level(s: &str) -> Result<baton_core::Level, String> {
    s.parse()
        .map_err(|_| "use 1, 2 or 3 (L1 progressive launch, L2 deactivate, L3 interrupt)".into())
}
