"""Run: the selected retrievers over the eval set, each built once, each ranking computed once."""
