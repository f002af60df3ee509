"""`python -m api_tracer.api_list [--dialect torch|paddle] [--check]`: the
command README.md gives for the API lists; the generator is
frameworks/api_lists.py, each framework's scan its api_list.py."""

import sys

from .frameworks.api_lists import main

if __name__ == "__main__":
    sys.exit(main())
