//! AdmissionReview fixtures (`tests/data/CASE.request.json`) against their golden responses
//! (`CASE.response.json`); where a pod is patched, the patch decoded (`CASE.patch.json`) and
//! the pod it gives (`CASE.pod.json`), applied here by a small JSONPatch applier.
//! `BATON_BLESS=1` rewrites the golden files from what the webhook answers.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use baton_webhook::Injection;
use baton_webhook::review::respond;
use serde_json::Value;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn read_json(name: &str) -> Value {
    let text = std::fs::read_to_string(data(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Compares `actual` with the golden file `name`, or writes it under `BATON_BLESS=1`.
fn golden(name: &str, actual: &Value) {
    if std::env::var_os("BATON_BLESS").is_some() {
        let text = serde_json::to_string_pretty(actual).unwrap() + "\n";
        std::fs::write(data(name), text).unwrap();
        return;
    }
    assert_eq!(
        &read_json(name),
        actual,
        "{name} differs (BATON_BLESS=1 rewrites it)"
    );
}

/// The review's response, and its patch decoded if it has one.
fn review(body: &[u8]) -> (Value, Option<Value>) {
    let response: Value = serde_json::from_slice(&respond(body, &Injection::default())).unwrap();
    let r = &response["response"];
    assert_eq!(r["allowed"], true, "the webhook never denies: {response}");
    let patch = r.get("patch").map(|p| {
        assert_eq!(r["patchType"], "JSONPatch");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(p.as_str().unwrap())
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    });
    (response, patch)
}

/// Runs one case; returns the patched pod, if patched.
fn case(name: &str) -> Option<Value> {
    let request = read_json(&format!("{name}.request.json"));
    let (response, patch) = review(&serde_json::to_vec(&request).unwrap());
    golden(&format!("{name}.response.json"), &response);
    assert_eq!(response["response"]["uid"], request["request"]["uid"]);
    let patch = patch?;
    golden(&format!("{name}.patch.json"), &patch);
    let mut pod = request["request"]["object"].clone();
    apply(&mut pod, &patch);
    golden(&format!("{name}.pod.json"), &pod);

    // Idempotent: the patched pod, reviewed again, gets nothing more.
    let mut again = request.clone();
    again["request"]["object"] = pod.clone();
    let (response, patch) = review(&serde_json::to_vec(&again).unwrap());
    assert_eq!(
        patch, None,
        "{name}: a second review patched again: {response}"
    );
    Some(pod)
}

#[test]
fn a_selected_pod_gets_the_volume_its_mounts_and_the_environment() {
    let pod = case("selected").expect("a selected pod is patched");
    let volumes = pod["spec"]["volumes"].as_array().unwrap();
    let baton: Vec<_> = volumes
        .iter()
        .filter(|v| v.get("hostPath").is_some())
        .collect();
    assert_eq!(baton.len(), 1);
    assert_eq!(
        baton[0]["hostPath"],
        serde_json::json!({"path": "/var/lib/baton"})
    );
    for c in pod["spec"]["containers"].as_array().unwrap() {
        let mount = c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == baton[0]["name"])
            .unwrap();
        assert_eq!(mount["mountPath"], "/var/lib/baton");
        assert_eq!(mount["readOnly"], true);
        let env = |n: &str| {
            c["env"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["name"] == n)
                .cloned()
        };
        assert_eq!(
            env("LD_PRELOAD").unwrap()["value"],
            "/var/lib/baton/lib/libbaton_interposer.so"
        );
        assert_eq!(env("BATON_SCHEDULER").unwrap()["value"], "global");
        assert_eq!(
            env("BATON_SOCKET").unwrap()["value"],
            "/var/lib/baton/run/baton.sock"
        );
    }
    // Nothing else: the init container and the rest of the pod are as they were.
    let request = read_json("selected.request.json");
    let before = &request["request"]["object"];
    assert_eq!(
        pod["spec"]["initContainers"],
        before["spec"]["initContainers"]
    );
    assert_eq!(pod["metadata"], before["metadata"]);
    assert_eq!(
        pod["spec"]["securityContext"],
        before["spec"]["securityContext"]
    );
}

#[test]
fn an_unselected_pod_is_left_alone() {
    assert_eq!(case("unselected"), None);
}

#[test]
fn an_injected_pod_gets_nothing_twice() {
    assert_eq!(case("injected"), None);
}

#[test]
fn an_existing_ld_preload_is_appended_to() {
    let pod = case("ld-preload").expect("patched");
    let c = &pod["spec"]["containers"][0];
    let env = c["env"].as_array().unwrap();
    assert_eq!(
        env[0],
        serde_json::json!({"name": "LD_PRELOAD",
            "value": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2:/var/lib/baton/lib/libbaton_interposer.so"})
    );
    // The container's own BATON_SOCKET is kept, and no second one added.
    assert_eq!(
        env.iter().filter(|e| e["name"] == "BATON_SOCKET").count(),
        1
    );
    assert_eq!(env.iter().filter(|e| e["name"] == "LD_PRELOAD").count(), 1);
    // The pod had no volumes: the list is created.
    assert_eq!(pod["spec"]["volumes"].as_array().unwrap().len(), 1);
}

#[test]
fn a_pod_that_cannot_be_read_is_allowed_unchanged() {
    assert_eq!(case("not-a-pod"), None);
}

#[test]
fn a_body_that_is_not_json_is_allowed_unchanged() {
    let body = std::fs::read(data("not-json.request.txt")).unwrap();
    let (response, patch) = review(&body);
    assert_eq!(patch, None);
    golden("not-json.response.json", &response);
}

/// JSONPatch (RFC 6902), the two operations the webhook emits: `add` (to an object's member,
/// or into an array at an index or at its end, `-`) and `replace`.
fn apply(doc: &mut Value, patch: &Value) {
    for op in patch.as_array().expect("a patch is an array") {
        let path = op["path"].as_str().unwrap();
        let value = op["value"].clone();
        let (parent, last) = path.rsplit_once('/').unwrap();
        let last = last.replace("~1", "/").replace("~0", "~");
        let target = doc
            .pointer_mut(parent)
            .unwrap_or_else(|| panic!("{path}: no parent"));
        match (op["op"].as_str().unwrap(), target) {
            ("add", Value::Object(o)) => {
                o.insert(last, value);
            }
            ("add", Value::Array(a)) if last == "-" => a.push(value),
            ("add", Value::Array(a)) => a.insert(last.parse().unwrap(), value),
            ("replace", Value::Object(o)) => {
                assert!(o.contains_key(&last), "{path}: replace of a missing member");
                o.insert(last, value);
            }
            ("replace", Value::Array(a)) => a[last.parse::<usize>().unwrap()] = value,
            (other, _) => panic!("{path}: unexpected {other}"),
        }
    }
}
