import sys

from fsm.cli import main

sys.exit(main())
