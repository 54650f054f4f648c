"""The frozen app's entry script: the same ``main`` as the ``workbench`` console script."""

import sys

from workbench.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
