"""Files at the boundary: paths as the user sees them, atomic writes, JSON decoded with limits, side files read
by JSON path, TOML tables checked key by key."""
