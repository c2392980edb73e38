#!/usr/bin/env bash
# The cluster deployment's checks that need no cluster: the Helm chart rendered without helm
# (scripts/helm-render.py), its manifests checked for what Baton relies on, then validated
# against the Kubernetes API schemas with kubernetes-validate; and the Slurm SPANK plugin
# compiled where Slurm's headers are installed (a skip recorded in $BATON_SKIP_LOG elsewhere).
# PyYAML and kubernetes-validate come from PyPI into a virtual environment, pinned.
set -euo pipefail
cd "$(dirname "$0")/.."

PYYAML_VERSION=6.0.4
VALIDATE_VERSION=1.37.0
venv=target/cluster-venv
if ! "$venv/bin/python" -c "import yaml; assert yaml.__version__ == '$PYYAML_VERSION'" 2>/dev/null \
    || ! "$venv/bin/pip" show kubernetes-validate 2>/dev/null | grep -qx "Version: $VALIDATE_VERSION"; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "pyyaml==$PYYAML_VERSION" "kubernetes-validate==$VALIDATE_VERSION"
fi
python3() { "$venv/bin/python" "$@"; }

out=target/cluster
mkdir -p "$out"
python3 scripts/helm-render.py --namespace baton-system > "$out/rendered.yaml"
python3 - "$out/rendered.yaml" <<'PY'
import sys, yaml
docs = {d["kind"]: d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
assert set(docs) == {"DaemonSet", "ClusterRole", "ClusterRoleBinding", "ServiceAccount"}, set(docs)
rules = docs["ClusterRole"]["rules"]
assert rules == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}], rules
assert docs["ClusterRoleBinding"]["subjects"][0]["namespace"] == "baton-system"
pod = docs["DaemonSet"]["spec"]["template"]["spec"]
assert pod["hostPID"] is True, "the daemon must see pods' processes by their host pids"
assert pod["serviceAccountName"] == docs["ServiceAccount"]["metadata"]["name"]
daemon = pod["containers"][0]
cmd = daemon["command"]
assert "--kubernetes" in cmd and "--system" in cmd, cmd
metrics = cmd[cmd.index("--metrics") + 1]
assert metrics.startswith("127.0.0.1:"), "the daemon serves metrics on loopback only"
env = {e["name"]: e for e in daemon["env"]}
assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
host = pod["volumes"][0]["hostPath"]["path"]
assert cmd[cmd.index("--socket") + 1] == host + "/run/baton.sock"
assert any(m["mountPath"] == host for m in daemon["volumeMounts"])
install = pod["initContainers"][0]["command"][-1]
assert "mv -f /host/lib/.libbaton_interposer.so.new /host/lib/libbaton_interposer.so" in install
assert any(t.get("key") == "nvidia.com/gpu" for t in pod["tolerations"])
print("chart: rendered manifests hold what Baton relies on")
PY
# The opt-in webhook: off by default (above), rendered and checked when enabled.
python3 scripts/helm-render.py --namespace baton-system --set webhook.enabled=true \
    --set webhook.caBundle=Q0E= > "$out/rendered-webhook.yaml"
python3 - "$out/rendered-webhook.yaml" <<'PY'
import sys, yaml
docs = {d["kind"]: d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
assert {"Deployment", "Service", "MutatingWebhookConfiguration"} <= set(docs), set(docs)
hook = docs["MutatingWebhookConfiguration"]["webhooks"][0]
assert hook["failurePolicy"] == "Ignore", "the webhook must never block a pod's creation"
assert hook["sideEffects"] == "None" and hook["reinvocationPolicy"] == "Never"
assert hook["timeoutSeconds"] <= 5, hook["timeoutSeconds"]
assert hook["admissionReviewVersions"] == ["v1"]
assert hook["objectSelector"] == {"matchLabels": {"baton.dev/inject": "true"}}
assert hook["rules"] == [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                          "resources": ["pods"], "scope": "Namespaced"}], hook["rules"]
service = docs["Service"]
assert hook["clientConfig"]["service"]["name"] == service["metadata"]["name"]
assert hook["clientConfig"]["service"]["namespace"] == "baton-system"
assert hook["clientConfig"]["service"]["path"] == "/mutate"
template = docs["Deployment"]["spec"]["template"]
assert service["spec"]["selector"].items() <= template["metadata"]["labels"].items()
pod = template["spec"]
assert pod["automountServiceAccountToken"] is False, "the webhook reads nothing from the API server"
cmd = pod["containers"][0]["command"]
host = docs["DaemonSet"]["spec"]["template"]["spec"]["volumes"][0]["hostPath"]["path"]
assert cmd[cmd.index("--host-dir") + 1] == host, "the webhook injects the directory the DaemonSet fills"
tls = pod["volumes"][0]
mount = pod["containers"][0]["volumeMounts"][0]
assert tls["name"] == mount["name"] and "secretName" in tls["secret"]
assert cmd[cmd.index("--tls-cert") + 1] == mount["mountPath"] + "/tls.crt"
assert cmd[cmd.index("--tls-key") + 1] == mount["mountPath"] + "/tls.key"
print("chart: the webhook, when enabled, is opt-in per pod and never blocks a pod")
PY
# The SPANK plugin builds warning-free wherever Slurm's headers are (Debian: libslurm-dev).
if [ -f /usr/include/slurm/spank.h ]; then
    cc -Wall -Wextra -Werror -shared -fPIC -o "$out/spank_baton.so" deploy/slurm/spank_baton.c
    echo "slurm: spank_baton.so built"
else
    echo "slurm: no slurm/spank.h (apt-get install libslurm-dev); the SPANK plugin's build skipped"
    if [ -n "${BATON_SKIP_LOG:-}" ]; then
        echo "the SPANK plugin's build (no slurm/spank.h: apt-get install libslurm-dev)" >>"$BATON_SKIP_LOG"
    fi
fi
"$venv/bin/kubernetes-validate" --strict --quiet "$out/rendered.yaml" "$out/rendered-webhook.yaml"
echo "chart: manifests valid (strict) against the Kubernetes API schemas kubernetes-validate ships"
