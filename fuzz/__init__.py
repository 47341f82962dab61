"""Coverage-guided fuzzing of onyx's whole pipeline (see fuzz/README.md)."""
