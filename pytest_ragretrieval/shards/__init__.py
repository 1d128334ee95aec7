"""Sharded runs: which shard runs a question (`assignment.py`), a shard's items (`items.py`), its partial
record (`partial.py`) and the merge of the partials into one unsharded run (`merge.py`)."""
