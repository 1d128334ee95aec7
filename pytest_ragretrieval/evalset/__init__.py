"""Load: the corpus and the eval set, read from JSON Lines into plain records."""
