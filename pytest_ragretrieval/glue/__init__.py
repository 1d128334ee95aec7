"""What the pytest glue hands off to: the session, the command line as pytest saw it, the xdist verdicts folder."""
