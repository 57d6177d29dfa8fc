import sys

from rlguard.cli import main

sys.exit(main())
