"""Record: the results and baseline file format, and the baseline update."""
