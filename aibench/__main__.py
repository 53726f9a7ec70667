from aibench.cli import main

raise SystemExit(main())
