"""The labels: the gold chunks' recorded texts, re-anchoring moved gold, relabelling an eval set, and
pooling unjudged chunks into a labelling queue (with an LLM judge's proposals)."""
