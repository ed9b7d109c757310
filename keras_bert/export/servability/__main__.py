"""`python -m servability --json` (with this package's parent directory on the path): the worker process."""

import sys

from .worker import main

if sys.argv[1:] == ["--json"]:
    main()
