#!/usr/bin/env python3
"""Renders deploy/helm/baton without helm, for the tests.

The chart's templates keep to the few constructs this script renders exactly as helm does:
`{{ .Values.a.b }}`, `{{ .Release.Namespace }}`, `{{ .Chart.AppVersion }}` and
`{{- toYaml .Values.a | nindent N }}`, and `{{- if .Values.a }}` … `{{- end }}` (not nested,
no else) around whole manifests. Anything else is refused, so a template that grows beyond
them fails the tests instead of being rendered wrongly. As helm does, a template that renders
to nothing but whitespace is left out.

    scripts/helm-render.py [--namespace NS] [--set a.b=value ...] [CHART_DIR]
"""

import argparse
import pathlib
import re
import sys

import yaml

TAG = re.compile(r"(\s*)\{\{(-?)\s*(.*?)\s*(-?)\}\}")
# `{{- if .Values.a }}BODY{{- end }}`: both tags trim the whitespace before them, as in helm.
IF = re.compile(r"\s*\{\{-\s*if\s+(.*?)\s*\}\}(.*?)\s*\{\{-\s*end\s*\}\}", re.S)


def lookup(values, path):
    v = values
    for key in path.split("."):
        if not isinstance(v, dict) or key not in v:
            raise SystemExit(f"helm-render: no value {path!r} in values.yaml")
        v = v[key]
    return v


def truthy(v):
    # Go templates' truth: false, 0, nil and empty strings, lists and maps are false.
    return bool(v)


def conditionals(text, values):
    def block(m):
        cond = re.fullmatch(r"\.Values\.([\w.]+)", m.group(1))
        if not cond or re.search(r"\{\{-?\s*(if|else|end)\b", m.group(2)):
            raise SystemExit(f"helm-render: unsupported conditional {{{{- if {m.group(1)} }}}}")
        return m.group(2) if truthy(lookup(values, cond.group(1))) else ""

    return IF.sub(block, text)


def render_text(text, values, chart, namespace):
    text = conditionals(text, values)
    out = []
    pos = 0
    for m in TAG.finditer(text):
        lead, trim_left, expr, _trim_right = m.groups()
        out.append(text[pos : m.start()])
        if not trim_left:
            out.append(lead)
        pos = m.end()
        t = re.fullmatch(r"toYaml \.Values\.([\w.]+) \| nindent (\d+)", expr)
        if t:
            body = yaml.safe_dump(lookup(values, t.group(1)), default_flow_style=False, sort_keys=False)
            pad = " " * int(t.group(2))
            out.append("\n" + "\n".join(pad + line for line in body.rstrip("\n").split("\n")))
            continue
        if expr.startswith(".Values."):
            out.append(str(lookup(values, expr[len(".Values.") :])))
        elif expr == ".Release.Namespace":
            out.append(namespace)
        elif expr == ".Chart.AppVersion":
            out.append(str(chart["appVersion"]))
        else:
            raise SystemExit(f"helm-render: unsupported template construct {{{{ {expr} }}}}")
    out.append(text[pos:])
    return "".join(out)


def render(chart_dir, namespace="baton", overrides=()):
    chart_dir = pathlib.Path(chart_dir)
    chart = yaml.safe_load((chart_dir / "Chart.yaml").read_text())
    values = yaml.safe_load((chart_dir / "values.yaml").read_text())
    for o in overrides:
        key, _, raw = o.partition("=")
        *parents, last = key.split(".")
        d = values
        for p in parents:
            d = d.setdefault(p, {})
        d[last] = yaml.safe_load(raw)
    docs = []
    for t in sorted((chart_dir / "templates").glob("*.yaml")):
        body = render_text(t.read_text(), values, chart, namespace)
        if body.strip():
            docs.append(f"# Source: {chart['name']}/templates/{t.name}\n" + body)
    return "---\n".join(d if d.endswith("\n") else d + "\n" for d in docs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("chart", nargs="?", default=pathlib.Path(__file__).resolve().parent.parent / "deploy/helm/baton")
    ap.add_argument("--namespace", default="baton")
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()
    sys.stdout.write(render(a.chart, a.namespace, a.set))


if __name__ == "__main__":
    main()
