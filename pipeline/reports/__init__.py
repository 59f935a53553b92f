"""Report rendering (docs/analytics.md): HTML pages, PNG charts, the report index and the player card, as str/bytes."""
