"""Report: one input built from the run, rendered by one module per format."""
