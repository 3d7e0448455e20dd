"""deploy/grafana-dashboard.json is valid and every query names a metric Lumina exports
(a renamed metric would otherwise leave a panel silently empty)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lumina_app.observability import metrics

pytestmark = pytest.mark.unit

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana-dashboard.json"
# Names as Prometheus shows them: counters get _total, histograms _bucket/_sum/_count.
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def exported() -> set[str]:
    names = set()
    for metric in metrics.EXPORTED:
        for family in metric.describe():
            names |= {family.name + s for s in SUFFIXES[family.type]}
    return names


def test_every_query_uses_an_exported_metric() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert len(exprs) >= 10
    known = exported()
    for expr in exprs:
        used = set(re.findall(r"\blumina_[a-z_]+", expr))
        assert used, expr
        assert used <= known, (expr, used - known)
    covered = {name for expr in exprs for name in re.findall(r"\blumina_[a-z_]+", expr)}
    for metric in metrics.EXPORTED:  # and every metric is on the dashboard
        assert any(name.startswith(metric._name) for name in covered), metric._name


def test_panels_have_unique_ids_and_places() -> None:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    assert all({"x", "y", "w", "h"} <= set(p["gridPos"]) for p in panels)
