"""Small helpers that stages share and that belong to none of them: aligned
text tables (text_table.py), times and byte counts as people read them
(units.py), and where the package's own files are."""

import os

# The package's folder: a frame in a file below it is the tracer's own, not
# the program's (tracebacks, warnings' stack levels, recorded stacks).
PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "")
