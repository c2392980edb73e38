//! Policies on the wire: names, parameters and what the daemon reports about them.

use serde::{Deserialize, Serialize};

use crate::{
    MAX_MESSAGE_LEN, MAX_PARAM_VALUE_LEN, MAX_POLICIES, MAX_POLICY_NAME_LEN, MAX_POLICY_PARAMS,
    ProtocolError, check,
};

/// One policy parameter, `key=value` on the command line (`target_p99_us=500`). Keys are
/// lowercase names; the value is text the policy parses (and refuses with
/// `InvalidArgument` if it cannot).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PolicyParam {
    /// The parameter's name: `a-z`, `0-9`, `_`, `-`, `.`, at most [`MAX_POLICY_NAME_LEN`] bytes.
    pub key: String,
    /// Its value: printable, at most [`MAX_PARAM_VALUE_LEN`] bytes.
    pub value: String,
}

/// A policy the daemon can run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyEntry {
    /// Its name.
    pub name: String,
    /// What it does, in one line.
    pub description: String,
}

/// The policy in force and the others (answer to
/// [`Request::GetPolicy`](crate::Request::GetPolicy)).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyReport {
    /// The policy in force.
    pub current: String,
    /// The parameters it was given.
    pub params: Vec<PolicyParam>,
    /// Every policy the daemon knows, at most [`MAX_POLICIES`], in a stable order.
    pub available: Vec<PolicyEntry>,
}

impl PolicyReport {
    pub(crate) fn validate(&self) -> Result<(), ProtocolError> {
        check_policy(&self.current, &self.params)?;
        check::list_len("available", self.available.len(), MAX_POLICIES)?;
        for (i, p) in self.available.iter().enumerate() {
            let at = check::at("available", i);
            check::token(&format!("{at}.name"), &p.name, MAX_POLICY_NAME_LEN)?;
            check::text(
                &format!("{at}.description"),
                &p.description,
                MAX_MESSAGE_LEN,
            )?;
        }
        check::unique("available", self.available.iter().map(|p| p.name.as_str()))
    }
}

/// A policy name and its parameters: a valid name, at most [`MAX_POLICY_PARAMS`] parameters,
/// valid keys each given once, printable values.
pub(crate) fn check_policy(name: &str, params: &[PolicyParam]) -> Result<(), ProtocolError> {
    check::token("name", name, MAX_POLICY_NAME_LEN)?;
    check::list_len("params", params.len(), MAX_POLICY_PARAMS)?;
    for (i, p) in params.iter().enumerate() {
        let at = check::at("params", i);
        check::token(&format!("{at}.key"), &p.key, MAX_POLICY_NAME_LEN)?;
        check::text_or_empty(&format!("{at}.value"), &p.value, MAX_PARAM_VALUE_LEN)?;
    }
    check::unique("params", params.iter().map(|p| p.key.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(k: &str, v: &str) -> PolicyParam {
        PolicyParam {
            key: k.into(),
            value: v.into(),
        }
    }

    fn report() -> PolicyReport {
        PolicyReport {
            current: "hpf".into(),
            params: vec![],
            available: vec![PolicyEntry {
                name: "hpf".into(),
                description: "highest priority first".into(),
            }],
        }
    }

    #[test]
    fn policy_name_must_be_a_token() {
        assert!(check_policy("k-edf", &[]).is_ok());
        // The registry's prefixed forms travel too (`baton policy process:hpf` was refused
        // before it left the CLI).
        assert!(check_policy("process:hpf", &[]).is_ok());
        assert!(check_policy("chaos:17", &[]).is_ok());
        for bad in ["", "HPF", "a b", &"x".repeat(MAX_POLICY_NAME_LEN + 1)] {
            assert_eq!(check_policy(bad, &[]).unwrap_err().field(), Some("name"));
        }
    }

    #[test]
    fn params_are_bounded() {
        let ps: Vec<_> = (0..=MAX_POLICY_PARAMS)
            .map(|i| param(&format!("k{i}"), "1"))
            .collect();
        assert_eq!(
            check_policy("slo", &ps).unwrap_err().field(),
            Some("params")
        );
    }

    #[test]
    fn param_keys_must_be_tokens() {
        let e = check_policy("slo", &[param("Target", "1")]).unwrap_err();
        assert_eq!(e.field(), Some("params[0].key"));
    }

    #[test]
    fn param_values_must_be_printable_and_bounded() {
        let e = check_policy("slo", &[param("t", "1\n")]).unwrap_err();
        assert_eq!(e.field(), Some("params[0].value"));
        let long = "9".repeat(MAX_PARAM_VALUE_LEN + 1);
        let e = check_policy("slo", &[param("t", &long)]).unwrap_err();
        assert_eq!(e.field(), Some("params[0].value"));
    }

    #[test]
    fn param_keys_are_unique() {
        let e = check_policy("slo", &[param("t", "1"), param("t", "2")]).unwrap_err();
        assert_eq!(e.field(), Some("params"));
    }

    #[test]
    fn report_entries_are_checked() {
        assert!(report().validate().is_ok());
        let mut r = report();
        r.available[0].description.clear();
        assert_eq!(
            r.validate().unwrap_err().field(),
            Some("available[0].description")
        );
        let mut r = report();
        r.available.push(r.available[0].clone());
        assert_eq!(r.validate().unwrap_err().field(), Some("available"));
        let mut r = report();
        r.available = vec![r.available[0].clone(); MAX_POLICIES + 1];
        assert_eq!(r.validate().unwrap_err().field(), Some("available"));
    }
}
