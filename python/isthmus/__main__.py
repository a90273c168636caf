"""``python -m isthmus ...`` is ``isthmus ...``."""
import sys

from .cli import main

sys.exit(main())
