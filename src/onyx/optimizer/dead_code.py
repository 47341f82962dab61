"""Dead-code removal: nodes whose outputs nobody reads and that no graph output names; unused
initializers (not graph inputs, which a feed may override).

Graphs are visited innermost first and each graph's nodes last to first, so a whole dead chain goes in
one run, and values read only by a removed subgraph become dead for the graph around it.
"""

from __future__ import annotations

from onyx.ir.model import Model, Node
from onyx.optimizer._util import Scope, detach_deep, prune_value_info


def eliminate_dead_code(model: Model) -> bool:
    sc = Scope(model)
    changed = False
    for entry in reversed(sc.graphs()):
        g = entry.graph
        dead: list[Node] = []
        for node in reversed(g.nodes):
            if not node.outputs or any(sc.is_used(v) for v in node.outputs):
                continue
            detach_deep(node)
            dead.append(node)
        if dead:
            ids = {id(n) for n in dead}
            gone = {id(v) for n in dead for v in n.outputs}
            for n in dead:
                n.graph = None
            g.nodes[:] = [n for n in g.nodes if id(n) not in ids]
            g.value_info[:] = [v for v in g.value_info if id(v) not in gone]
            changed = True
        # before IR 4, initializers listed as inputs are constants nobody can feed: removable too
        legacy = sc.legacy_inputs and g is model.graph
        unused = [
            name
            for name, v in g.initializers.items()
            if not v.uses
            and not sc.is_graph_output(v)
            and (not sc.is_input(v) or (legacy and v.producer is None and id(v) not in sc.input_ids))
        ]
        if unused:
            gone = {id(g.initializers[name]) for name in unused}
            for name in unused:
                del g.initializers[name]
            if legacy:
                g.inputs[:] = [v for v in g.inputs if id(v) not in gone]
            g.value_info[:] = [v for v in g.value_info if id(v) not in gone]
            changed = True
    prune_value_info(sc)  # entries left behind by other passes: not a change of the computation
    return changed
