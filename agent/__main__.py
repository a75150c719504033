"""``python -m agent``: the ``toolnexus-agent`` command line."""

from agent.cli import main

raise SystemExit(main())
