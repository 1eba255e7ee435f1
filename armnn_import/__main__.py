"""python -m armnn_import: the armnn-import command line."""
import sys

from .cli import main

sys.exit(main())
