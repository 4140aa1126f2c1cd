"""__main__.py - `python -m kval_analysis` runs the kval-analyze command line."""
import sys

from .cli import main

sys.exit(main())
