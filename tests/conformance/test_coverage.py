"""Every operator and every version the onnx package defines resolves to an onyx kernel."""

import onnx.defs
import pytest

from onyx.ops import registry

DOMAINS = {"", "ai.onnx.ml", "ai.onnx.preview.training", "ai.onnx.preview"}
SCHEMAS = sorted(
    {
        (s.domain, s.name, s.since_version)
        for s in onnx.defs.get_all_schemas_with_history()
        if s.domain in DOMAINS
    }
)


@pytest.mark.parametrize(
    "domain,op,version", SCHEMAS, ids=[f"{d or 'ai.onnx'}::{o}-{v}" for d, o, v in SCHEMAS]
)
def test_every_schema_version_has_a_kernel(domain, op, version):
    kernel = registry.lookup(op, domain, version)
    assert kernel.since <= version


def test_operator_table_lists_every_registered_op():
    from pathlib import Path

    table = (Path(__file__).resolve().parents[2] / "docs" / "OperatorKernels.md").read_text()
    builtin = {
        k
        for k, ks in registry.registered().items()
        if any(x.fn.__module__.startswith("onyx.ops.") for x in ks)
    }
    missing = [f"{d}::{o}" for (d, o) in builtin if f"| {o} |" not in table]
    assert not missing, f"regenerate docs/OperatorKernels.md (scripts/gen_operator_table.py): {missing}"
    import json

    import onyx

    shipped = json.loads((Path(onyx.__file__).parent / "data" / "op_types.json").read_text())
    unlisted = [f"{d or 'ai.onnx'}::{o}" for (d, o) in builtin if f"{d or 'ai.onnx'}::{o}" not in shipped]
    assert not unlisted, f"regenerate src/onyx/data/op_types.json (scripts/gen_operator_table.py): {unlisted}"
