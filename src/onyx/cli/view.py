"""``onyx view MODEL``: the graph as one self-contained HTML page (no network), optionally with a profile."""

from __future__ import annotations

import argparse
import os
import sys

from onyx.cli.optimize import check_destination
from onyx.errors import NoSuchFile

HELP = "draw a model as one self-contained HTML page (offline), optionally coloured by a profile"
EXAMPLE = "onyx view model.onnx -o graph.html --profile trace.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model")
    p.add_argument(
        "--output", "-o", metavar="GRAPH.html", help="where to write (default MODEL.html beside it)"
    )
    p.add_argument(
        "--profile",
        metavar="TRACE.json",
        help="a Chrome trace (onyx profile, enable_profiling) to show times",
    )


def main(args: argparse.Namespace, out=None) -> int:
    from onyx.debug.view import render_html

    out = out or sys.stdout
    if not os.path.exists(args.model):
        raise NoSuchFile(f"model {args.model!r} does not exist")
    dest = args.output or os.path.splitext(args.model)[0] + ".html"
    check_destination(dest, args.model)
    folder = os.path.dirname(os.path.abspath(dest))
    page = render_html(args.model, profile=args.profile)
    staged = os.path.join(folder, f".{os.path.basename(dest)}.tmp")
    try:
        with open(staged, "w", encoding="utf-8") as fh:
            fh.write(page)
        os.replace(staged, dest)
    finally:
        if os.path.exists(staged):
            os.unlink(staged)
    print(
        f"wrote {dest} ({len(page.encode('utf-8')) / 1024:.0f} KB): open it in any browser, offline", file=out
    )
    return 0
