import sys

from onyx.cli import main

sys.exit(main())
