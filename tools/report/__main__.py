"""``python -m tools.report``: :func:`tools.report.pages.main`."""

from tools.report.pages import main

raise SystemExit(main())
