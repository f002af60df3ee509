"""--check: a config's call judged against a reference side."""
