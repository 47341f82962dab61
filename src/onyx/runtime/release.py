"""Freeing a dropped session's model at once, by reference counting, without waiting for the collector.

onyx's IR is a web of reference cycles by design (a value knows its producer and its uses, a node its
graph), so a model, with the weights and mapped files its initializers hold, would outlive the last
reference to it until the cyclic garbage collector runs (never, where a server disables it). A session
owns its model (a copy, or one it loaded itself): when the session goes, :func:`break_dead_cycles` does
for that model alone what the collector would do. It counts, for each object of the model, the references
that come from inside the model; an object with more references than that is held from outside (the
caller kept ``session.model``, a traceback holds a plan) and stays whole, with everything it reaches.
The rest can never be reached again: its lists and dicts are emptied and its IR objects' fields dropped,
so that reference counting frees it all at once.
"""

from __future__ import annotations

import enum
import gc
import sys
import weakref
from typing import Any

from onyx.ir import model as ir_model

_CONTAINERS = frozenset({list, tuple, dict, set, frozenset})
#: the IR classes whose instances are emptied once unreachable (the cycles run through them)
_CLEARED_CLASSES = frozenset(
    t
    for t in vars(ir_model).values()
    if isinstance(t, type) and t.__module__ == ir_model.__name__ and not issubclass(t, enum.Enum)
)


class _Roots:
    """The models to release, held by the token alone (never by the finalizer's registry: a session in
    a reference cycle must leave its model to the same collection)."""

    __slots__ = ("items", "__weakref__")

    def __init__(self, items: list) -> None:
        self.items = items


class _Token:
    """What a session holds last: when it goes (with the session), the session's model is released."""

    __slots__ = ("roots", "__weakref__")


def release_when_dropped(*roots: Any) -> object:
    """A token to keep as the holder's last attribute: once the token is freed (the holder's other
    attributes before it), the parts of ``roots`` (models) nothing else references are freed at once."""
    token = _Token()
    token.roots = _Roots(list(roots))
    # a dying object's weak references are called before its fields are cleared: the token's roots are
    # still there then. A token freed by the collector (a session in a cycle) finds them gone: the
    # collector frees them in the same pass
    finalizer = weakref.finalize(token, _release, weakref.ref(token.roots))
    finalizer.atexit = False  # at exit the process goes anyway: no walk over every live model
    return token


def _release(roots_ref: weakref.ref) -> None:
    roots = roots_ref()
    if roots is None:
        return
    holder, roots.items = [roots.items], []
    roots = None
    break_dead_cycles(holder)  # the walk's own reference to the models is the only one left here


def _entered(o: Any) -> bool:
    """Whether the walk enters ``o``: the IR's nodes, values, graphs, models, attributes and the builtin
    containers that hold them. Everything else (types, tensors, arrays, mapped files) is a leaf: a
    reference from a leaf back into the model counts as one from outside, which only keeps more alive;
    an empty container reaches nothing."""
    t = type(o)
    return t in _CLEARED_CLASSES or (t in _CONTAINERS and len(o) > 0)


def _graph_of(root: Any) -> tuple[list[Any], list[list[int]]]:
    """``root`` and the containers and IR objects reachable from it through such objects, with each
    one's references to the others (as indices, once per reference)."""
    objs = [root]
    index = {id(root): 0}
    edges: list[list[int]] = []
    entered = _entered
    i = 0
    while i < len(objs):
        out = []
        for r in gc.get_referents(objs[i]):
            j = index.get(id(r))
            if j is None:
                if not entered(r):
                    continue
                j = index[id(r)] = len(objs)
                objs.append(r)
            out.append(j)
        edges.append(out)
        i += 1
    return objs, edges


def break_dead_cycles(holder: list) -> int:
    """Empty the objects reachable from ``holder``'s one item (which it gives up) that nothing outside
    them references; returns how many were emptied (0 when the model is still held from outside)."""
    objs, edges = _graph_of(holder.pop())
    n = len(objs)
    inside = [0] * (n + 1)
    for out in edges:
        for j in out:
            inside[j] += 1
    objs.append(object())  # a probe held by ``objs`` alone: what "no outside reference" counts as
    baseline = sys.getrefcount(objs[n])
    live = [sys.getrefcount(objs[i]) - inside[i] > baseline for i in range(n)]
    stack = [i for i in range(n) if live[i]]
    while stack:  # what an outside reference holds is reachable: everything it reaches stays
        for j in edges[stack.pop()]:
            if not live[j]:
                live[j] = True
                stack.append(j)
    # counted again: another thread that moved its only reference from one object of the model to another
    # between the two counts (it could only have got it from the model it already held) stops the release
    if any(sys.getrefcount(objs[i]) - inside[i] != baseline for i in range(n) if not live[i]):
        return 0
    cleared = 0
    for i in range(n):
        if live[i]:
            continue
        o = objs[i]
        t = type(o)
        if t is list or t is dict or t is set:
            o.clear()
        elif t in _CLEARED_CLASSES:
            for cls in t.__mro__:
                slots = getattr(cls, "__slots__", ())
                for name in (slots,) if isinstance(slots, str) else slots:
                    if name != "__weakref__":
                        try:
                            delattr(o, name)
                        except AttributeError:
                            pass
            if hasattr(o, "__dict__"):
                o.__dict__.clear()
        else:
            continue
        cleared += 1
    return cleared
