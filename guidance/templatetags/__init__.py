"""Template filters of the guidance pages: Markdown, hours, sizes, a lookup by key."""
