"""Score: metrics as trec_eval defines them, rankings scored per question, paired tests."""
