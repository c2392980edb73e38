//! One test per hint rule.

use super::*;

fn field_of(h: Hint) -> String {
    h.validate()
        .expect_err("should be refused")
        .field()
        .unwrap()
        .to_string()
}

#[test]
fn valid_hints_pass() {
    for h in [
        Hint::Priority(WirePriority(-100)),
        Hint::Utilization { percent: 100 },
        Hint::TimeSlice {
            slice_ns: MIN_TIME_SLICE_NS,
        },
        Hint::Deadline {
            deadline_ns: MAX_DURATION_NS,
        },
        Hint::KEdf { k: MAX_K },
        Hint::Laxity {
            laxity_ns: 1,
            lax_priority: WirePriority(0),
            critical_priority: WirePriority(0),
        },
        Hint::ActiveWindow { active: false },
        Hint::Upcoming {
            arrives_in_ns: 0,
            expires_in_ns: 1,
        },
        Hint::Clear(HintKind::Laxity),
    ] {
        assert!(h.validate().is_ok(), "{h:?}");
    }
}

#[test]
fn priority_out_of_range() {
    assert_eq!(field_of(Hint::Priority(WirePriority(101))), "priority");
}

#[test]
fn utilization_zero() {
    assert_eq!(field_of(Hint::Utilization { percent: 0 }), "percent");
}

#[test]
fn utilization_over_100() {
    assert_eq!(field_of(Hint::Utilization { percent: 101 }), "percent");
}

#[test]
fn time_slice_too_short() {
    let h = Hint::TimeSlice {
        slice_ns: MIN_TIME_SLICE_NS - 1,
    };
    assert_eq!(field_of(h), "slice_ns");
}

#[test]
fn time_slice_too_long() {
    let h = Hint::TimeSlice {
        slice_ns: MAX_TIME_SLICE_NS + 1,
    };
    assert_eq!(field_of(h), "slice_ns");
}

#[test]
fn deadline_zero_or_too_long() {
    assert_eq!(field_of(Hint::Deadline { deadline_ns: 0 }), "deadline_ns");
    let h = Hint::Deadline {
        deadline_ns: MAX_DURATION_NS + 1,
    };
    assert_eq!(field_of(h), "deadline_ns");
}

#[test]
fn k_out_of_range() {
    assert_eq!(field_of(Hint::KEdf { k: 0 }), "k");
    assert_eq!(field_of(Hint::KEdf { k: MAX_K + 1 }), "k");
}

#[test]
fn laxity_out_of_range() {
    let h = Hint::Laxity {
        laxity_ns: 0,
        lax_priority: WirePriority(0),
        critical_priority: WirePriority(1),
    };
    assert_eq!(field_of(h), "laxity_ns");
}

#[test]
fn laxity_priorities_in_range() {
    let h = Hint::Laxity {
        laxity_ns: 5,
        lax_priority: WirePriority(-101),
        critical_priority: WirePriority(1),
    };
    assert_eq!(field_of(h), "lax_priority");
    let h = Hint::Laxity {
        laxity_ns: 5,
        lax_priority: WirePriority(0),
        critical_priority: WirePriority(200),
    };
    assert_eq!(field_of(h), "critical_priority");
}

#[test]
fn laxity_critical_below_lax() {
    let h = Hint::Laxity {
        laxity_ns: 5,
        lax_priority: WirePriority(10),
        critical_priority: WirePriority(9),
    };
    let e = h.validate().unwrap_err();
    assert_eq!(e.field(), Some("critical_priority"));
    assert!(e.to_string().contains("lose priority"), "{e}");
}

#[test]
fn upcoming_expiry_zero_or_past_horizon() {
    let h = Hint::Upcoming {
        arrives_in_ns: 0,
        expires_in_ns: 0,
    };
    assert_eq!(field_of(h), "expires_in_ns");
    let h = Hint::Upcoming {
        arrives_in_ns: 0,
        expires_in_ns: MAX_HINT_HORIZON_NS + 1,
    };
    assert_eq!(field_of(h), "expires_in_ns");
}

#[test]
fn upcoming_arrival_after_expiry() {
    let h = Hint::Upcoming {
        arrives_in_ns: 10,
        expires_in_ns: 9,
    };
    assert_eq!(field_of(h), "arrives_in_ns");
}

#[test]
fn scopes_are_enforced() {
    let p = Hint::Priority(WirePriority(1));
    assert!(p.check_scope(Scope::Queue).is_ok() && p.check_scope(Scope::Process).is_ok());
    let e = p.check_scope(Scope::Device).unwrap_err();
    assert!(e.to_string().contains("a queue or a process"), "{e}");
    let k = Hint::KEdf { k: 2 };
    assert!(k.check_scope(Scope::Device).is_ok() && k.check_scope(Scope::All).is_ok());
    assert!(k.check_scope(Scope::Queue).is_err() && k.check_scope(Scope::Process).is_err());
    let w = Hint::ActiveWindow { active: true };
    assert!(w.check_scope(Scope::Process).is_ok());
    assert!(w.check_scope(Scope::Queue).is_err());
    for s in [Scope::Queue, Scope::Process, Scope::Device, Scope::All] {
        assert!(Hint::Clear(HintKind::KEdf).check_scope(s).is_ok());
    }
}

#[test]
fn hint_set_rejects_clears() {
    let e = check_hint_set("hints", &[Hint::Clear(HintKind::Priority)], Scope::Queue).unwrap_err();
    assert_eq!(e.field(), Some("hints[0]"));
}

#[test]
fn hint_set_rejects_duplicate_kinds() {
    let hs = [
        Hint::Priority(WirePriority(1)),
        Hint::Priority(WirePriority(2)),
    ];
    let e = check_hint_set("hints", &hs, Scope::Queue).unwrap_err();
    assert_eq!(e.field(), Some("hints"));
    assert!(e.to_string().contains("twice"), "{e}");
}

#[test]
fn hint_set_checks_values_and_scope_with_a_path() {
    let hs = [Hint::Utilization { percent: 0 }];
    let e = check_hint_set("hints", &hs, Scope::Queue).unwrap_err();
    assert_eq!(e.field(), Some("hints[0].percent"));
    let hs = [Hint::KEdf { k: 1 }];
    let e = check_hint_set("hints", &hs, Scope::Queue).unwrap_err();
    assert_eq!(e.field(), Some("hints[0].target"));
}

#[test]
fn hint_set_is_bounded() {
    let hs = vec![Hint::Priority(WirePriority(1)); HintKind::ALL.len() + 1];
    let e = check_hint_set("hints", &hs, Scope::Queue).unwrap_err();
    assert!(e.to_string().contains("limit"), "{e}");
}

#[test]
fn every_kind_has_a_scope_and_a_name() {
    for k in HintKind::ALL {
        assert!(!k.scopes().is_empty());
        assert!(!k.to_string().is_empty());
    }
}
