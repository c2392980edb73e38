//! The checks that message validation is made of, and [`sanitize_text`] for senders.
//!
//! Each check names the field it looked at, so a rejected message says exactly which value was
//! wrong and what is accepted.

use std::collections::HashSet;
use std::fmt::Display;
use std::hash::Hash;

use crate::{MAX_PID, ProtocolError};

type Checked = Result<(), ProtocolError>;

/// `s` made fit for a text field of at most `max` bytes: control characters (which could
/// rewrite an operator's terminal when `baton list` prints them) become U+FFFD, and the text is
/// cut at a character boundary. Senders use this on names, command lines and error text they
/// did not write themselves. The result may be empty if `s` is.
pub fn sanitize_text(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max));
    for c in s.chars() {
        let c = if c.is_control() { '\u{FFFD}' } else { c };
        if out.len() + c.len_utf8() > max {
            break;
        }
        out.push(c);
    }
    out
}

/// Text of at most `max` bytes without control characters; may be empty.
pub(crate) fn text_or_empty(field: &str, s: &str, max: usize) -> Checked {
    if s.len() > max {
        return Err(ProtocolError::invalid(
            field,
            format!("{} bytes of text, the limit is {max}", s.len()),
        ));
    }
    if let Some(c) = s.chars().find(|c| c.is_control()) {
        return Err(ProtocolError::invalid(
            field,
            format!("control character {c:?} in text; send printable text (see sanitize_text)"),
        ));
    }
    Ok(())
}

/// Non-empty text of at most `max` bytes without control characters.
pub(crate) fn text(field: &str, s: &str, max: usize) -> Checked {
    if s.is_empty() {
        return Err(ProtocolError::invalid(
            field,
            "empty text; a value is required",
        ));
    }
    text_or_empty(field, s, max)
}

/// A non-empty token of at most `max` bytes of `a-z`, `0-9`, `_`, `-`, `.` and `:`: policy
/// names (the registry's own forms `process:NAME` and `chaos:SEED` included), parameter keys.
pub(crate) fn token(field: &str, s: &str, max: usize) -> Checked {
    text(field, s, max)?;
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || "_-.:".contains(*c)))
    {
        return Err(ProtocolError::invalid(
            field,
            format!(
                "character {c:?} not allowed: use lowercase letters, digits, '_', '-', '.', ':'"
            ),
        ));
    }
    Ok(())
}

/// A non-empty identifier of at most `max` bytes of printable ASCII without spaces: device ids.
pub(crate) fn ident(field: &str, s: &str, max: usize) -> Checked {
    text(field, s, max)?;
    if let Some(c) = s.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(ProtocolError::invalid(
            field,
            format!("character {c:?} not allowed: use printable ASCII without spaces"),
        ));
    }
    Ok(())
}

/// `min <= v <= max`.
pub(crate) fn range<T: PartialOrd + Display>(field: &str, v: T, min: T, max: T) -> Checked {
    if v < min || v > max {
        return Err(ProtocolError::invalid(
            field,
            format!("{v} is out of range: it must be between {min} and {max}"),
        ));
    }
    Ok(())
}

/// A list of at most `max` entries.
pub(crate) fn list_len(field: &str, len: usize, max: usize) -> Checked {
    if len > max {
        return Err(ProtocolError::invalid(
            field,
            format!("{len} entries, the limit is {max}"),
        ));
    }
    Ok(())
}

/// No value appears twice.
pub(crate) fn unique<T: Eq + Hash + Display>(
    field: &str,
    items: impl IntoIterator<Item = T>,
) -> Checked {
    let mut seen = HashSet::new();
    for item in items {
        if let Some(dup) = seen.replace(item) {
            return Err(ProtocolError::invalid(
                field,
                format!("{dup} appears twice"),
            ));
        }
    }
    Ok(())
}

/// A Linux process id: `1..=MAX_PID`.
pub(crate) fn pid(field: &str, pid: u32) -> Checked {
    if pid == 0 || pid > MAX_PID {
        return Err(ProtocolError::invalid(
            field,
            format!("{pid} is not a process id: it must be between 1 and {MAX_PID}"),
        ));
    }
    Ok(())
}

/// A finite, non-negative number of at most `max`.
pub(crate) fn real(field: &str, v: f64, max: f64) -> Checked {
    if !v.is_finite() || !(0.0..=max).contains(&v) {
        return Err(ProtocolError::invalid(
            field,
            format!("{v} is out of range: it must be a number between 0 and {max}"),
        ));
    }
    Ok(())
}

/// The path of entry `i` of list `field`.
pub(crate) fn at(field: &str, i: usize) -> String {
    format!("{field}[{i}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_replaces_controls_and_cuts_at_char_boundaries() {
        assert_eq!(sanitize_text("a\x1b[2Jb\n", 64), "a\u{FFFD}[2Jb\u{FFFD}");
        assert_eq!(sanitize_text("ééé", 5), "éé");
        assert_eq!(sanitize_text("", 5), "");
        let s = sanitize_text(&"x\u{7}".repeat(1000), 100);
        assert!(s.len() <= 100);
        assert!(text("f", &s, 100).is_ok());
    }

    #[test]
    fn text_rules() {
        assert!(text("f", "ok", 2).is_ok());
        assert_eq!(text("f", "", 2).unwrap_err().field(), Some("f"));
        assert!(
            text("f", "abc", 2)
                .unwrap_err()
                .to_string()
                .contains("limit is 2")
        );
        assert!(
            text("f", "a\tb", 8)
                .unwrap_err()
                .to_string()
                .contains("control")
        );
        assert!(text_or_empty("f", "", 2).is_ok());
    }

    #[test]
    fn tokens_and_idents() {
        assert!(token("p", "hpf-2.k_edf", 32).is_ok());
        assert!(token("p", "HPF", 32).is_err());
        assert!(token("p", "a b", 32).is_err());
        assert!(ident("d", "GPU-8d2f-00", 64).is_ok());
        assert!(ident("d", "GPU 0", 64).is_err());
        assert!(ident("d", "GPU-é", 64).is_err());
    }

    #[test]
    fn numbers_lists_and_pids() {
        assert!(range("r", 5, 1, 5).is_ok());
        assert!(range("r", 0, 1, 5).is_err());
        assert!(list_len("l", 3, 2).is_err());
        assert!(unique("u", [1, 2, 3]).is_ok());
        assert!(
            unique("u", [1, 2, 1])
                .unwrap_err()
                .to_string()
                .contains("1 appears twice")
        );
        assert!(pid("p", 1).is_ok() && pid("p", MAX_PID).is_ok());
        assert!(pid("p", 0).is_err() && pid("p", MAX_PID + 1).is_err());
        assert!(real("x", 0.5, 1.0).is_ok());
        for bad in [f64::NAN, f64::INFINITY, -0.1, 1.1] {
            assert!(real("x", bad, 1.0).is_err(), "{bad}");
        }
    }
}
