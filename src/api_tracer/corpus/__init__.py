"""Commands over traces: merge, diff, stats, coverage, export."""
