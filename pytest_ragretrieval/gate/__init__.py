"""Judge: the items, the fingerprint and the verdict of each item against the baseline."""
