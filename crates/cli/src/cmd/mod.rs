//! One module per subcommand.

pub mod config;
pub mod daemon;
pub mod demo;
pub mod doctor;
pub mod hint;
pub mod list;
pub mod policy;
pub mod priority;
pub mod run;
pub mod top;
pub mod trace;
