"""bench.run's report: failures are named by their exception line and listed under the table."""

from bench.run import _exception_line, table


def test_exception_line_of_a_message_over_several_lines():
    text = (
        "Traceback (most recent call last):\n  File 'x.py', line 1\n"
        "NotImplementedError: No implementation for 'ZipMap' in\nBinarizer,\nTreeEnsembleRegressor\n"
    )
    assert _exception_line(text) == "NotImplementedError: No implementation for 'ZipMap' in"
    assert _exception_line("killed\n") == "killed"
    assert _exception_line("") == "?"


def test_table_lists_failures_under_it():
    ok = {"latency_ms": 2.0, "create_s": 0.1, "peak_rss_mb": 10.0}
    md = table(
        {
            "m@1": {"onyx": ok, "ort": dict(ok, latency_ms=1.0), "ref": {"error": "ValueError: bad"}},
            "n@8": {"onyx": {"error": "timeout after 5 s"}, "ort": ok, "ref": ok},
        }
    )
    lines = md.splitlines()
    assert "| m | 1 | 2.00 | 1.00 | fails (1) | 2.00x |" in lines[2]
    assert lines[3].startswith("| n | 8 | fails (2) | 2.00 | 2.0 | — |")
    assert lines[-2:] == ["1. m@1 ref: ValueError: bad", "2. n@8 onyx: timeout after 5 s"]
