"""Node-suite cases onyx does not pass, each with its reason. The list may only shrink."""

KNOWN_FAILURES: dict[str, str] = {}
