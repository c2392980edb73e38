//! Every policy Baton knows, by name.

use crate::{Hpf, Policy};

/// A policy's name and one line saying what it does.
#[derive(Clone, Copy, Debug)]
pub struct PolicyInfo {
    /// The name to select it by.
    pub name: &'static str,
    /// What it does, in one line.
    pub description: &'static str,
    make: fn() -> Box<dyn Policy>,
}

impl PolicyInfo {
    /// A fresh instance of the policy.
    pub fn instantiate(&self) -> Box<dyn Policy> {
        (self.make)()
    }
}

const CATALOG: &[PolicyInfo] = &[PolicyInfo {
    name: "hpf",
    description: "highest priority first per device: lower priorities wait while a higher one is ready",
    make: || Box::new(Hpf),
}];

/// Every registered policy, in a stable order.
pub fn catalog() -> &'static [PolicyInfo] {
    CATALOG
}

/// No policy is registered under this name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown policy {name:?}: choose one of {known}")]
pub struct UnknownPolicy {
    /// The name asked for.
    pub name: String,
    /// The names that exist, comma-separated.
    pub known: String,
}

/// A fresh instance of the policy called `name` (case-insensitive).
pub fn by_name(name: &str) -> Result<Box<dyn Policy>, UnknownPolicy> {
    CATALOG
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name.trim()))
        .map(PolicyInfo::instantiate)
        .ok_or_else(|| UnknownPolicy {
            name: name.to_string(),
            known: CATALOG
                .iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_name_instantiates_itself() {
        for info in catalog() {
            assert_eq!(by_name(info.name).unwrap().name(), info.name);
            assert!(!info.description.is_empty());
        }
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let err = by_name("fastest").err().unwrap();
        assert!(err.to_string().contains("hpf"), "{err}");
    }
}
