"""`python -m bot.cli`: the `mini-fix` command."""

import sys

from bot.cli.main import main

sys.exit(main())
