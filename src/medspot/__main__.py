import sys

from medspot.cli import main

sys.exit(main())
