import sys

from layoutverify.apps.cli import main

sys.exit(main())
