"""Review: what a pull request does to the bar (the baseline's changes), the approval policy, the comment."""
