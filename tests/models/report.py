"""Print, per real model, which outputs onyx gets right and which operators it lacks.

    python -m tests.models.report              # every model of tests/models/exporters.py
    python -m tests.models.report bert lstm    # only keys containing one of these substrings

For each model: the operators (domain::op@opset) that have no onyx kernel, then one line per output
(ok / MISMATCH with the difference) or the error onyx raised.
"""

from __future__ import annotations

import sys
import traceback
import warnings


def missing_kernels(path) -> list[str]:
    import onnx

    from onyx.errors import NotImplemented as OnyxNotImplemented
    from onyx.ops import registry

    model = onnx.load(str(path), load_external_data=False)
    opsets = {registry.normalize_domain(o.domain): o.version for o in model.opset_import}
    local = {(f.domain, f.name) for f in model.functions}
    nodes = [(n, opsets) for n in model.graph.node]
    for f in model.functions:
        fo = {registry.normalize_domain(o.domain): o.version for o in f.opset_import}
        nodes += [(n, fo) for n in f.node]

    def walk(node, ops):
        yield node, ops
        for a in node.attribute:
            for g in [a.g] if a.HasField("g") else list(a.graphs):
                for n in g.node:
                    yield from walk(n, ops)

    missing = set()
    for top, ops in nodes:
        for n, o in walk(top, ops):
            if (n.domain, n.op_type) in local:
                continue
            domain = registry.normalize_domain(n.domain)
            version = o.get(domain, 1)
            try:
                registry.lookup(n.op_type, domain, version)
            except OnyxNotImplemented:
                missing.add(f"{domain or 'ai.onnx'}::{n.op_type}@{version}")
    return sorted(missing)


def main(argv: list[str]) -> int:
    warnings.simplefilter("ignore")
    import onnxruntime as ort

    from tests.models import exporters
    from tests.models._runner import run_onyx, runner_name
    from tests.models.test_real_models import compare, shipped_digits

    patterns = [p.lower() for p in argv[1:]]
    builders = dict(exporters.all_models())
    builders["digits/shipped"] = lambda: shipped_digits()
    print(f"runner: {runner_name()}")
    n_ok = 0
    for key, build in builders.items():
        if patterns and not any(p in key.lower() for p in patterns):
            continue
        try:
            path, feeds = build()
        except exporters.ExportFailed as e:
            print(f"{key}: EXPORT SKIPPED ({e})")
            continue
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        expected = sess.run(None, feeds)
        names = [o.name for o in sess.get_outputs()]
        missing = missing_kernels(path)
        try:
            got = run_onyx(path, feeds)
        except Exception as e:  # noqa: BLE001 - a report of every failure
            msg = "".join(traceback.format_exception_only(type(e), e)).strip().splitlines()[0][:300]
            print(f"{key}: ERROR {msg}" + (f"  [missing kernels: {', '.join(missing)}]" if missing else ""))
            continue
        lines = [(n, compare(g, e, n)) for n, g, e in zip(names, got, expected)]
        ok = all(err is None for _, err in lines) and len(got) == len(expected)
        n_ok += ok
        print(f"{key}: {'OK' if ok else 'MISMATCH'}")
        for n, err in lines:
            print(f"    {n}: {'ok' if err is None else err}")
    print(f"{n_ok} models match onnxruntime")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
